// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * The kernel stacks of episodes still open when the sampler reads a tick (deferred_stacks
 * in threadcap.bpf.c): for each row off CPU in a state that gets a stack, the sampler asks
 * for (thread, its start time) and this iterator walks them all in one run, each thread's
 * stack as it waits now, which is the one it waited in at the tick (the episode has not
 * ended: had it, its end would have walked it). A thread gone, or a tid reused since
 * (another start time), gets no frames.
 */
#include "include/vmlinux.h"
#include "include/bpf_helpers.h"
#include "threadcap.h"
#include "askiter.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Kernel 6.2 and newer; user space loads this object only where the kernel has them. */
extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

/* The kernel fields read, matched by CO-RE to the running kernel's (suffixes ignored). */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct task_struct___tc {
	__u64 start_time;
};
#pragma clang attribute pop

/* One question and, after the run, its answer. */
struct tc_kstack_ask {
	__s32 tid;
	__u32 nr; /* frames in ips; 0: none */
	__u64 start_ns; /* the thread's start time, as its record has it */
	__u64 ips[TC_STACK_DEPTH];
};

/* Stacks walked, since load: what threadcap.bpf.c's TC_STACK_WALKS does not count. */
__u64 walks = 0;

ASK_ITERATOR(struct tc_kstack_ask, walk, bpf_task_from_pid && bpf_task_release)

static long walk(__u32 i, void *unused)
{
	struct tc_kstack_ask *ask = ask_at(i);
	struct task_struct *task;
	long n;

	if (!ask)
		return 1;
	ask->nr = 0;
	task = bpf_task_from_pid(ask->tid);
	if (!task)
		return 0;
	if (((struct task_struct___tc *)task)->start_time == ask->start_ns) {
		n = bpf_get_task_stack(task, ask->ips, sizeof(ask->ips), 0);
		walks++;
		if (n > 0)
			ask->nr = n / sizeof(ask->ips[0]);
	}
	bpf_task_release(task);
	return 0;
}
