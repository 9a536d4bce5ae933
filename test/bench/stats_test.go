// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, math.NaN(), 1}, 3},
	} {
		if got := median(c.v); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.v, got, c.want)
		}
	}
	if got := median([]float64{math.NaN()}); !math.IsNaN(got) {
		t.Errorf("median of nothing = %v, want NaN", got)
	}
}

func TestSpread(t *testing.T) {
	if got := spread([]float64{90, 100, 110}); got != 0.2 {
		t.Errorf("spread = %v, want 0.2", got)
	}
}

func TestRatiosPairSamplesOfTheSameRound(t *testing.T) {
	base := []sample{{round: 0, ops: 100}, {round: 1, ops: 200}, {round: 2, ops: 50}}
	// Round 3 has no baseline and is left out.
	got := ratios([]sample{{round: 1, ops: 150}, {round: 0, ops: 90}, {round: 3, ops: 1}}, base)
	want := []float64{0.75, 0.9}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ratios = %v, want %v", got, want)
	}
}

func TestCSVGrowth(t *testing.T) {
	before := map[string]int64{"a.csv": 100}
	if got := csvGrowth(before, map[string]int64{"a.csv": 150, "b.csv": 30}); got != 80 {
		t.Errorf("growth = %v, want 80: a new hour file counts from nothing", got)
	}
	if got := csvGrowth(before, map[string]int64{"b.csv": 30}); !math.IsNaN(got) {
		t.Errorf("growth = %v, want NaN: a compressed hour's growth is unknown", got)
	}
}

func TestStatusField(t *testing.T) {
	status := "Name:\tthreadcap\nVmPeak:\t  123456 kB\nVmHWM:\t   28672 kB\nVmRSS:\t   27000 kB\n"
	if got, err := statusField(status, "VmHWM"); err != nil || got != 28672 {
		t.Errorf("VmHWM = %d, %v; want 28672", got, err)
	}
	if _, err := statusField(status, "VmSwap"); err == nil {
		t.Error("a missing field is not an error")
	}
}

func TestDisturbedCountsWindowsWithAnotherTracer(t *testing.T) {
	r := results{}
	r.add(wlSyscalls, configNone, sample{foreign: 0})
	r.add(wlSyscalls, configFloor, sample{foreign: 3})
	r.add(wlMix, configNone, sample{foreign: 0})
	if n, of := r.disturbed(); n != 1 || of != 3 {
		t.Errorf("disturbed = %d of %d, want 1 of 3", n, of)
	}
}
