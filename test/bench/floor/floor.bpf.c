// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * The benchmark's floor: empty programs on every hook threadcap uses. What they cost is
 * what any design built on these hooks pays; threadcap's own cost is measured above it.
 * Keep this list equal to the SEC() lines of bpf/threadcap.bpf.c and bpf/io.bpf.c (block
 * I/O tracking is on by default).
 */
#include "../../../bpf/include/vmlinux.h"
#include "../../../bpf/include/bpf_helpers.h"
#include "../../../bpf/include/bpf_tracing.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch) { return 0; }

SEC("tp_btf/sched_wakeup")
int BPF_PROG(floor_wakeup) { return 0; }

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(floor_wakeup_new) { return 0; }

SEC("tp_btf/cpu_idle")
int BPF_PROG(floor_idle) { return 0; }

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(floor_timer_entry) { return 0; }

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(floor_timer) { return 0; }

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_sys_enter) { return 0; }

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_sys_exit) { return 0; }

SEC("tp_btf/sched_process_exec")
int BPF_PROG(floor_exec) { return 0; }

SEC("tp_btf/task_rename")
int BPF_PROG(floor_rename) { return 0; }

SEC("tp_btf/block_rq_insert")
int BPF_PROG(floor_rq_insert) { return 0; }

SEC("tp_btf/block_rq_issue")
int BPF_PROG(floor_rq_issue) { return 0; }

SEC("tp_btf/block_rq_merge")
int BPF_PROG(floor_rq_merge) { return 0; }

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(floor_rq_requeue) { return 0; }

SEC("tp_btf/block_rq_complete")
int BPF_PROG(floor_rq_complete) { return 0; }
