// SPDX-License-Identifier: Apache-2.0

package main

import (
	"math"
	"slices"
)

// median of v, ignoring NaNs; NaN when nothing is left.
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(v), math.IsNaN)))
	switch n := len(s); {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return s[n/2]
	default:
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// spread is (max − min) / median: how far apart the repeats were.
func spread(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	return (slices.Max(v) - slices.Min(v)) / median(v)
}

// field picks one number out of each sample.
func field(samples []sample, f func(sample) float64) []float64 {
	v := make([]float64, len(samples))
	for i, s := range samples {
		v[i] = f(s)
	}
	return v
}

func ops(s sample) float64 { return s.ops }

// ratios divides each sample's throughput by the baseline's of the same round: pairs
// measured minutes apart would carry the machine's drift into the ratio.
func ratios(samples, baseline []sample) []float64 {
	byRound := map[int]float64{}
	for _, b := range baseline {
		byRound[b.round] = b.ops
	}
	var r []float64
	for _, s := range samples {
		if b, ok := byRound[s.round]; ok && b > 0 {
			r = append(r, s.ops/b)
		}
	}
	return r
}
