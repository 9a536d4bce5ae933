/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The log2 latency histograms of spans (threadcap.bpf.c) and block requests (io.bpf.c):
 * bucket 0 holds what took under 1 µs, bucket b >= 1 [2^(b-1), 2^b) µs, and the last
 * also everything longer. One definition, so that the two cannot bucket differently.
 */
#ifndef __THREADCAP_HISTOGRAM_H__
#define __THREADCAP_HISTOGRAM_H__

#define TC_HIST_BUCKETS 32
/* Indexes are masked with TC_HIST_BUCKETS - 1 for the verifier: a power of two only. */
_Static_assert((TC_HIST_BUCKETS & (TC_HIST_BUCKETS - 1)) == 0, "TC_HIST_BUCKETS must be a power of two");

/* floor(log2(v)) for v > 0. Not a loop: a binary search over the bits of v. */
static __always_inline __u32 tc_log2(__u64 v)
{
	__u32 r, shift;

	r = (v > 0xffffffff) << 5;
	v >>= r;
	shift = (v > 0xffff) << 4;
	v >>= shift;
	r |= shift;
	shift = (v > 0xff) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xf) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	return r | (v >> 1);
}

/* The bucket of a duration of ns, already masked for use as an index. */
static __always_inline __u32 tc_hist_bucket(__u64 ns)
{
	__u64 us = ns / 1000;
	__u32 b;

	if (!us)
		return 0;
	b = tc_log2(us) + 1;
	if (b >= TC_HIST_BUCKETS)
		b = TC_HIST_BUCKETS - 1;
	return b & (TC_HIST_BUCKETS - 1);
}

#endif /* __THREADCAP_HISTOGRAM_H__ */
