// SPDX-License-Identifier: Apache-2.0

package bpf

import (
	"math"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/threadcap/threadcap/test/privileged"
	"github.com/threadcap/threadcap/test/workload"
)

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "0", want: []int{0}},
		{in: "0-3", want: []int{0, 1, 2, 3}},
		{in: "0-1,4,6-7", want: []int{0, 1, 4, 6, 7}},
		{in: "", bad: true},
		{in: "3-1", bad: true},
		{in: "a", bad: true},
	} {
		got, err := parseCPUList(tc.in)
		if (err != nil) != tc.bad || !slices.Equal(got, tc.want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestCheckProfileHz(t *testing.T) {
	for hz, ok := range map[int]bool{0: true, 1: true, 49: true, 99: true, 1000: true, -1: false, 1001: false, 100000: false} {
		if err := CheckProfileHz(hz); (err == nil) != ok {
			t.Errorf("CheckProfileHz(%d) = %v", hz, err)
		}
	}
}

// TestProfileShares: three threads on CPU 100%, 50% and 20% of the time get, each, the
// share of the profile's samples that schedstat gives them of the three's CPU time, within
// 0.05 over 10 s at 99 Hz. What the samples stand for (1/99 s each) against the CPU time
// is logged, not checked: the timer runs on wall time, so time the hypervisor steals from a
// thread on CPU is sampled, while the kernel's count leaves it out.
func TestProfileShares(t *testing.T) {
	privileged.Require(t)
	p, err := OpenProfile(99, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	threads := []*workload.Thread{
		workload.Spinner(t),
		workload.Burster(t, 35*time.Millisecond, 70*time.Millisecond),
		workload.Burster(t, 14*time.Millisecond, 70*time.Millisecond),
	}
	if _, _, err := p.Take(); err != nil { // from here on
		t.Fatal(err)
	}
	before := make([]uint64, len(threads))
	for i, th := range threads {
		before[i], _ = workload.Schedstat(t, th.Tid)
	}
	time.Sleep(10 * time.Second)
	counts, stacks, err := p.Take()
	if err != nil {
		t.Fatal(err)
	}
	cpu := make([]float64, len(threads))
	samples := make([]float64, len(threads))
	var cpuSum, sampleSum float64
	for i, th := range threads {
		after, _ := workload.Schedstat(t, th.Tid)
		cpu[i] = float64(after - before[i])
		cpuSum += cpu[i]
		for _, c := range counts {
			if int(c.Tid) != th.Tid {
				continue
			}
			samples[i] += float64(c.Samples)
			if c.UserStack >= 0 && len(stacks[c.UserStack]) == 0 {
				t.Errorf("thread %d: user stack %d has no frames", th.Tid, c.UserStack)
			}
		}
		sampleSum += samples[i]
	}
	for i, th := range threads {
		share, want := samples[i]/sampleSum, cpu[i]/cpuSum
		// 0.05, or three standard deviations of a share of so few samples when the
		// machine gave the threads too little CPU for 0.05 to be told from chance.
		tol := math.Max(0.05, 3*math.Sqrt(want*(1-want)/sampleSum))
		t.Logf("thread %d: %.0f samples, share %.3f; schedstat %.2f s, share %.3f (within %.3f)", th.Tid, samples[i], share, cpu[i]/1e9, want, tol)
		if math.Abs(share-want) > tol {
			t.Errorf("thread %d: share of samples %.3f, of CPU time %.3f: more than %.3f apart", th.Tid, share, want, tol)
		}
	}
	t.Logf("the samples stand for %.2f s of CPU, schedstat says %.2f s", sampleSum/99, cpuSum/1e9)
	if p.LostSamples() != 0 {
		t.Errorf("%d samples lost", p.LostSamples())
	}
}

// TestProfileBySpan: with the tracker's spans shared, spanwork's samples while it spins
// inside span work (tc_work, nested in span call) count under work, the innermost, and
// those of other threads under no span.
func TestProfileBySpan(t *testing.T) {
	privileged.Require(t)
	bin := workload.SpanWork(t)
	tr := openTracker(t, Config{Spans: spanworkProbes(t, bin)})
	p, err := OpenProfile(99, tr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	workload.Spinner(t) // outside any span
	cmd := exec.Command(bin, "40", "50", "1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("spanwork: %v", err)
	}
	counts, _, err := p.Take()
	if err != nil {
		t.Fatal(err)
	}
	bySpan := map[uint16]uint64{}
	var others, othersInSpan uint64
	for _, c := range counts {
		if int(c.Pid) == cmd.Process.Pid {
			bySpan[c.Span] += c.Samples
			continue
		}
		others += c.Samples
		if c.Span != 0 {
			othersInSpan += c.Samples
		}
	}
	var all uint64
	for _, n := range bySpan {
		all += n
	}
	t.Logf("spanwork's samples by span (id + 1): %v; other threads' %d, %d of them in a span", bySpan, others, othersInSpan)
	// 40 calls spinning 50 ms inside work: 2 s on CPU, some 200 samples, nearly all there.
	if all < 50 || float64(bySpan[2]) < 0.8*float64(all) {
		t.Errorf("%d of spanwork's %d samples under span work (id 1), want most of at least 50", bySpan[2], all)
	}
	if othersInSpan != 0 {
		t.Errorf("%d samples of other threads count under a span", othersInSpan)
	}
}
