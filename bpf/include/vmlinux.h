/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The few kernel types and constants threadcap's programs use. Every struct is
 * preserve_access_index: libbpf/cilium-ebpf relocate each field access against the
 * running kernel's BTF, so only the fields named here must exist, at any offset.
 */
#ifndef __THREADCAP_VMLINUX_H__
#define __THREADCAP_VMLINUX_H__

typedef unsigned char __u8;
typedef short int __s16;
typedef short unsigned int __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long int __s64;
typedef long long unsigned int __u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef int pid_t;
enum { false = 0, true = 1 };

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_HASH = 5,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_QUEUE = 22,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
	BPF_F_NO_PREALLOC = 1U << 0,
	BPF_F_MMAPABLE = 1U << 10,
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
};

enum {
	BPF_F_USER_STACK = 1ULL << 8,
};

enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1ULL << 0,
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct kernfs_node {
	__u64 id;
};

struct cgroup {
	struct kernfs_node *kn;
};

struct css_set {
	struct cgroup *dfl_cgrp;
};

struct sched_entity {
	__u64 sum_exec_runtime;
};

struct task_struct {
	unsigned int __state;
	int on_cpu;
	struct sched_entity se;
	unsigned int flags;
	__u64 start_time;
	pid_t pid;
	pid_t tgid;
	char comm[16];
	struct css_set *cgroups;
};

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
};
#elif defined(__TARGET_ARCH_arm64)
struct pt_regs {
	__u64 regs[31];
	__u64 orig_x0;
	__s32 syscallno;
};
#else
#error "threadcap supports __TARGET_ARCH_x86 and __TARGET_ARCH_arm64"
#endif

struct linux_binprm;

struct gendisk {
	int major;
	int first_minor;
};

struct request_queue {
	struct gendisk *disk;
};

struct request {
	struct request_queue *q;
	__u32 cmd_flags;
	unsigned int __data_len;
};

#pragma clang attribute pop

#endif /* __THREADCAP_VMLINUX_H__ */
