/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the CPU profile (profile.bpf.c) counts. bpf2go generates the Go mirrors (-type).
 */
#ifndef __THREADCAP_PROFILE_H__
#define __THREADCAP_PROFILE_H__

/* Frames kept per stack: as many as the tracker's stacks (TC_STACK_DEPTH). */
#define TC_PROFILE_STACK_DEPTH 48

/* What samples are counted by: the thread, and its two stacks as ids in the stack map of
 * the same generation; -1 for a stack not taken (a kernel stack of user code, a user stack
 * of a kernel thread) or lost (its bucket of the stack map held another stack). */
struct tc_profile_key {
	__u32 pid;
	__u32 tid;
	__s32 kstack;
	__s32 ustack;
	__u32 span; /* the innermost span open (its id + 1), 0: none or spans off */
};

/* Samples of a key, and the names of its thread and process at its first sample. */
struct tc_profile_count {
	__u64 samples;
	char thread[16];
	char process[16];
};

#endif
