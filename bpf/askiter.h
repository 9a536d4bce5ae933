/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A program that answers the sampler's asks in the sampler's thread, a batch a run (see
 * askiter.go): user space writes asks [0, nr_asks) into the array asks through its mapping
 * (a batch update of 1,000 asks took 0.5 ms), reads the link's file of the iterator
 * answer_asks to its end, which runs it once, and reads the answers back in place.
 *
 * ASK_ITERATOR(ask_t, answer, ready) makes them: the array of ask_t, sized at load time;
 * one_batch, a map of one element for answer_asks to iterate over, so that it is called
 * once a run; nr_asks; ask_at(i), ask i; and answer_asks, which calls answer(i, NULL) for
 * each ask (bpf_loop, Linux 5.17) when ready, an expression saying the kernel has what
 * answer needs (the weak kfuncs it calls). answer is defined after it, as a bpf_loop
 * callback: static long answer(__u32 i, void *unused).
 */
#ifndef THREADCAP_ASKITER_H
#define THREADCAP_ASKITER_H

#include "mapiter.h"

#define ASK_ITERATOR(ask_t, answer, ready)                                      \
	struct {                                                                \
		__uint(type, BPF_MAP_TYPE_ARRAY);                               \
		__uint(map_flags, BPF_F_MMAPABLE);                              \
		__type(key, __u32);                                             \
		__type(value, ask_t);                                           \
		__uint(max_entries, 1);                                         \
	} asks SEC(".maps");                                                    \
	struct {                                                                \
		__uint(type, BPF_MAP_TYPE_ARRAY);                               \
		__type(key, __u32);                                             \
		__type(value, __u32);                                           \
		__uint(max_entries, 1);                                         \
	} one_batch SEC(".maps");                                               \
	__u32 nr_asks = 0;                                                      \
	static ask_t *ask_at(__u32 i)                                           \
	{                                                                       \
		return bpf_map_lookup_elem(&asks, &i);                          \
	}                                                                       \
	static long answer(__u32 i, void *unused);                              \
	SEC("iter/bpf_map_elem")                                                \
	int answer_asks(struct bpf_iter__bpf_map_elem *ctx)                     \
	{                                                                       \
		if (!ctx->key || !(ready))                                      \
			return 0;                                               \
		bpf_loop(nr_asks, answer, NULL, 0);                             \
		return 0;                                                       \
	}

#endif
