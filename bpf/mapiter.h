/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The context of an iterator over a map's elements (Linux 5.9). threadcap's programs that
 * run once per read of their link's file (the hook-free pass, the ask iterators) iterate
 * over a map of one element: one call a run, in the reading thread.
 */
#ifndef THREADCAP_MAPITER_H
#define THREADCAP_MAPITER_H

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct bpf_iter_meta;
struct bpf_iter__bpf_map_elem {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
	void *key;
	void *value;
};
#pragma clang attribute pop

#endif
