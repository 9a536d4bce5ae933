// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * threadcap's CPU profile: a program run by a per-CPU perf event (software cpu-clock at
 * profile.hz), counting the running thread's kernel and user stacks per thread. An object
 * of its own, loaded only when the profile is on; it reads the tracker's open spans
 * (span_threads, shared at load time) when spans are configured, and writes nothing of it.
 *
 * The counts and stacks are double-buffered: the program writes to generation gen (0 or
 * 1), and user space, once a minute, flips gen, reads the other generation whole and then
 * empties it. So a stack id always means the stack it was stored as while its counts are
 * read, without any pruning against references (as the tracker's stack map needs).
 */
#include "include/vmlinux.h"
#include "include/bpf_helpers.h"
#include "profile.h"
#include "threadcap.h"

#define EEXIST 17

/* The one field of task_struct this object needs that vmlinux.h leaves out: relocated
 * against the running kernel's task_struct like every field there (CO-RE flavor). */
struct task_struct___profile {
	struct task_struct *group_leader;
} __attribute__((preserve_access_index));

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* 1: span_threads is the tracker's (shared at load time), and samples count by span. */
volatile const __u8 spans_on = 0;

/* The tracker's open spans by tid (threadcap.bpf.c), replaced by it at load time when spans
 * are configured; this declaration only gives its shape. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct tc_span_thread);
	__uint(max_entries, 1);
} span_threads SEC(".maps");

/* The generation samples are counted in; written by user space (memory-mapped .bss). */
__u32 gen = 0;

/* Samples not counted because the counts map of their generation was full. */
__u64 lost_samples = 0;
/* Stacks not stored because their bucket of the stack map held another stack. */
__u64 lost_stacks = 0;

/* Stack maps sized at load time. A stack never replaces another in its bucket (no
 * BPF_F_REUSE_STACKID): an id means one stack until user space empties the map. */
#define STACK_MAP                                                           \
	struct {                                                            \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                     \
		__uint(key_size, sizeof(__u32));                            \
		__uint(value_size, TC_PROFILE_STACK_DEPTH * sizeof(__u64)); \
		__uint(max_entries, 1);                                     \
	}

#define COUNT_MAP                                                   \
	struct {                                                    \
		__uint(type, BPF_MAP_TYPE_HASH);                    \
		__type(key, struct tc_profile_key);                 \
		__type(value, struct tc_profile_count);             \
		__uint(max_entries, 1);                             \
	}

STACK_MAP profile_stacks0 SEC(".maps");
STACK_MAP profile_stacks1 SEC(".maps");
COUNT_MAP profile_counts0 SEC(".maps");
COUNT_MAP profile_counts1 SEC(".maps");

/*
 * The innermost span the current thread has open, id + 1; 0 when none. Only the thread's
 * own probes write its entry, and a perf event program does not run inside another
 * program on its CPU, so the entry should be whole here; seq is checked anyway, as user
 * space checks it, and an entry that moved while read counts as no span.
 */
static __always_inline __u32 innermost_span(__u32 tid)
{
	struct tc_span_thread *t;
	__u32 seq;
	__u8 depth;
	__u16 span;

	if (!spans_on)
		return 0;
	t = bpf_map_lookup_elem(&span_threads, &tid);
	if (!t)
		return 0;
	seq = *(volatile __u32 *)&t->seq;
	depth = *(volatile __u8 *)&t->depth;
	if ((seq & 1) || depth == 0 || depth > TC_SPAN_DEPTH)
		return 0;
	span = *(volatile __u16 *)&t->frames[(depth - 1) & (TC_SPAN_DEPTH - 1)].span;
	if (*(volatile __u32 *)&t->seq != seq)
		return 0;
	return (__u32)span + 1;
}

static __always_inline __s32 stack_id(long id)
{
	if (id == -EEXIST)
		__sync_fetch_and_add(&lost_stacks, 1);
	return id < 0 ? -1 : (__s32)id;
}

/*
 * Why a perf event: a software cpu-clock event per CPU is an hrtimer that interrupts the
 * CPU at a fixed period (NSEC_PER_SEC / sample_freq, not adjusted), whatever runs there,
 * so a thread's samples are in proportion to its CPU time; the program runs with the
 * interrupted registers, so the kernel stack starts at the code interrupted (none when
 * that was user code), not in the timer's own frames.
 */
SEC("perf_event")
int on_profile_tick(void *ctx)
{
	struct tc_profile_key key = {};
	struct tc_profile_count *c;
	__u64 id = bpf_get_current_pid_tgid();
	void *stacks, *counts;

	key.tid = (__u32)id;
	if (key.tid == 0)
		return 0; /* the idle task: not a thread's CPU time */
	key.pid = id >> 32;
	if (gen) {
		stacks = &profile_stacks1;
		counts = &profile_counts1;
	} else {
		stacks = &profile_stacks0;
		counts = &profile_counts0;
	}
	key.span = innermost_span(key.tid);
	key.kstack = stack_id(bpf_get_stackid(ctx, stacks, 0));
	key.ustack = stack_id(bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK));

	c = bpf_map_lookup_elem(counts, &key);
	if (!c) {
		struct tc_profile_count first = {};
		struct task_struct___profile *task = (void *)bpf_get_current_task_btf();

		bpf_get_current_comm(first.thread, sizeof(first.thread));
		bpf_probe_read_kernel_str(first.process, sizeof(first.process), task->group_leader->comm);
		/* Another CPU may insert the key first (EEXIST): then its entry counts. */
		bpf_map_update_elem(counts, &key, &first, BPF_NOEXIST);
		c = bpf_map_lookup_elem(counts, &key);
		if (!c) {
			__sync_fetch_and_add(&lost_samples, 1); /* the map is full */
			return 0;
		}
	}
	__sync_fetch_and_add(&c->samples, 1);
	return 0;
}
