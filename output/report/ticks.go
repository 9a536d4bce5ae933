// SPDX-License-Identifier: Apache-2.0

package report

// tickCount counts ticks of one hour from one source, in all and by timeline bucket.
type tickCount struct {
	total    int64
	byBucket map[*Bucket]int64
}

func (c *tickCount) add(b *Bucket) {
	c.total++
	if b != nil {
		if c.byBucket == nil {
			c.byBucket = map[*Bucket]int64{}
		}
		c.byBucket[b]++
	}
}

// endHour adds the ticks of the hour just read. A whole ticks file has every tick of its
// hour, rows or not. Without one (written by a threadcap that did not keep them), or with
// one damaged, the ticks its rows show count too, whichever source saw more in each
// bucket: each misses ticks and never has one too many, so a damaged ticks file never
// makes the hour's averages larger than its rows allow.
func (s *scan) endHour(wholeTicksFile bool) {
	file, rows := s.fileTicks, s.rowTicks
	s.fileTicks, s.rowTicks = tickCount{}, tickCount{}
	if wholeTicksFile {
		rows = tickCount{}
	}
	if s.q.Step == 0 {
		s.res.Ticks += max(file.total, rows.total)
		return
	}
	for b, n := range file.byBucket {
		n = max(n, rows.byBucket[b])
		b.Ticks += n
		s.res.Ticks += n
	}
	for b, n := range rows.byBucket {
		if _, seen := file.byBucket[b]; !seen {
			b.Ticks += n
			s.res.Ticks += n
		}
	}
}
