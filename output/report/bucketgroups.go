// SPDX-License-Identifier: Apache-2.0

package report

import (
	"cmp"
	"math/bits"
	"slices"
	"strings"

	"github.com/threadcap/threadcap/state"
)

// HistBuckets is the length of Bucket.Hist: bucket 0 holds values under 1 µs, bucket b
// those in [2^(b-1), 2^b) µs, the last one everything longer, as state.SpanBuckets.
const HistBuckets = state.SpanBuckets

// addToHist counts a value of microseconds in b.Hist; an empty or unreadable one is
// unknown and left out.
func addToHist(b *Bucket, v []byte) {
	u, ok := digits(v)
	if !ok {
		// A sign, a long number or no number: atoi says.
		n, ok := atoi(v)
		if len(v) == 0 || !ok || n < 0 {
			return
		}
		u = uint64(n)
	}
	b.Hist[min(bits.Len64(u), HistBuckets-1)]++
}

// digits reads a field of 1 to 18 decimal digits, as nearly every value of a histogram's
// is, without atoi's checks for a sign and for overflow (18 digits are under 2^63); false
// for any other field.
func digits(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var u uint64
	for _, c := range v {
		if c-'0' > 9 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	return u, true
}

// bucketGroups returns the groups of bucket b, made on first use.
func (s *scan) bucketGroups(b *Bucket) map[string]*Group {
	if s.byBucket == nil {
		s.byBucket = map[*Bucket]map[string]*Group{}
	}
	groups := s.byBucket[b]
	if groups == nil {
		groups = map[string]*Group{}
		s.byBucket[b] = groups
	}
	return groups
}

// sortedGroups lists groups most active first, in mostActive's order; nil when there are
// none. A page's buckets hold hundreds of thousands of groups, so the groups are sorted by
// their sums and keys, and copied once: a key is the group's values each ended by a NUL,
// which none holds (schema.AppendCSV never writes one), so keys are in the order of their
// values, and one comparison of keys costs less than one of each value.
func sortedGroups(groups map[string]*Group) []Group {
	if len(groups) == 0 {
		return nil
	}
	type entry struct {
		rows, cpu int64
		key       string
		g         *Group
	}
	entries := make([]entry, 0, len(groups))
	for key, g := range groups {
		entries = append(entries, entry{g.Rows, g.CPUUs, key, g})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if c := cmp.Or(cmp.Compare(b.rows, a.rows), cmp.Compare(b.cpu, a.cpu)); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	out := make([]Group, len(entries))
	for i, e := range entries {
		out[i] = *e.g
	}
	return out
}

// mostActive orders groups by rows, then CPU time, then values: the order a breakdown lists.
func mostActive(a, b Group) int {
	// Values only when the sums tie: cmp.Or would compare them every time.
	if c := cmp.Or(cmp.Compare(b.Rows, a.Rows), cmp.Compare(b.CPUUs, a.CPUUs)); c != 0 {
		return c
	}
	return slices.Compare(a.Values, b.Values)
}

// StackFrames reads the stacks files of the hours of the samples files (Result.Files):
// each stack's hash (the kernel_stack and user_stack columns) and its frames, outermost
// first and ';'-separated. A stacks file that is gone or cut short gives what it holds.
func StackFrames(files []string) (map[string]string, error) {
	var damaged []FileDamage
	return stackFrames(files, &damaged)
}

// stackFrames is StackFrames, adding what could not be read to damaged.
func stackFrames(files []string, damaged *[]FileDamage) (map[string]string, error) {
	frames := map[string]string{}
	for _, path := range files {
		if err := readStacks(path, frames, damaged); err != nil {
			return nil, err
		}
	}
	return frames, nil
}
