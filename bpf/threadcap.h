/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the kernel side records for each thread. bpf2go generates the Go mirrors of these
 * types (-type), so this header is the single definition of the record's layout.
 */
#ifndef __THREADCAP_H__
#define __THREADCAP_H__

#include "histogram.h"

/* What a thread is doing. The first TC_TIMED_STATES states have a cumulative time. */
enum tc_state : __u8 {
	TC_ON_CPU = 0,
	TC_RUNNABLE = 1,        /* woken or preempted, waiting for a CPU */
	TC_SLEEPING = 2,        /* interruptible sleep, idle kernel threads, parked */
	TC_UNINTERRUPTIBLE = 3, /* D state: disk I/O, vfork wait, uninterruptible locks */
	TC_STOPPED = 4,         /* stopped by a signal or a tracer */
	TC_TIMED_STATES = 5,
	TC_DEAD = 5,            /* exited; the slot is freed once user space has read it */
};

enum tc_counter : __u32 {
	TC_LOST_UPDATES = 0,    /* events about threads that have no record */
	TC_UNTRACKED_THREADS = 1, /* threads refused a record because the map was full */
	TC_LOST_STACKS = 2,     /* stacks not captured: the stack map's bucket held another */
	TC_UNSEEN_SWITCHES = 3, /* switch-outs the kernel made without a sched_switch event */
	/* The spans' losses (see the spans section of threadcap.bpf.c). */
	TC_SPAN_NO_RECORD = 4,  /* probes hit by a thread without a record (map full) */
	TC_SPAN_NO_ROOM = 5,    /* starts not kept: span_threads full, or TC_SPAN_DEPTH open */
	TC_SPAN_MISSED_ENDS = 6, /* open spans dropped because an outer end or a restart came */
	TC_SPAN_UNMATCHED = 7,  /* ends with no open span (begun before threadcap, say) */
	/* A thread's own event not written: its record stayed claimed by another writer (see
	 * seqclaim.h) past the wait, or by a write this event interrupted. A defect to count. */
	TC_WRITE_CONFLICTS = 8,
	/* Kernel stacks walked for episodes a tick saw (deferred_stacks): at their end here,
	 * or, still open, when the sampler asks (kstackask.bpf.c counts those). */
	TC_STACK_WALKS = 9,
	TC_NR_COUNTERS = 10,
};

/* tick_stacks: which stacks of a thread on CPU at a tick are taken. */
enum tc_tick_stack : __u8 {
	TC_TICK_KERNEL_STACK = 1,
	TC_TICK_USER_STACK = 2,
};

/* Frames kept per stack, the few frames of the sched_switch hook and the scheduler included. */
#define TC_STACK_DEPTH 48

#define TC_NO_SYSCALL (-1)

/*
 * The kernel stack of a thread off CPU at a tick, walked as its episode ended (with
 * deferred_stacks): the frames innermost first, nr of them.
 */
struct tc_tick_kstack {
	__u64 tick_ns; /* the tick the episode spanned */
	__u32 nr;
	__u32 pad;
	__u64 ips[TC_STACK_DEPTH];
};

/*
 * What a row shows of a thread: everything about it that an event changes. A record keeps
 * two: the live one, and the one as of the tick (see struct record).
 */
struct tc_view {
	__u64 since_ns; /* CLOCK_MONOTONIC time the current state began */
	__u64 cpu_ns;   /* the kernel's count of its CPU time, up to cpu_at_ns */
	__u64 cpu_at_ns; /* when cpu_ns was brought up to date: a switch, or a timer while on CPU */
	__u64 state_ns[TC_TIMED_STATES]; /* cumulative, up to since_ns */
	__u64 sc_enter_ns;   /* full mode: entry; passive mode: the switch-out seen in it */
	__u64 sc_on_cpu_ns;  /* state_ns[TC_ON_CPU] as it stood at sc_enter_ns */
	__u64 sc_args[6];
	__s64 last_sc_ret;
	__u32 nvcsw;    /* voluntary switches (it slept) */
	__u32 nivcsw;   /* involuntary switches (preempted, yielded) */
	__s32 sc_nr;    /* syscall in progress, TC_NO_SYSCALL when none or unknown */
	__s32 last_sc_nr;
	__u16 cpu;      /* CPU it runs on, or last ran on */
	__u16 kstack;   /* kernel stack id + 1 at the last capturing switch-out; 0: none */
	__u16 ustack;   /* user stack id + 1, likewise */
	enum tc_state state;
	enum tc_state prev_state; /* the state before since_ns */
};

/*
 * One thread. Who writes it, and in what context:
 *   - its own CPU, in the thread's events: switch-out and switch-in (interrupts off),
 *     syscall entry and exit, exec (process context, interruptible);
 *   - the CPU running a wakeup of it, under its runqueue's lock, sometimes in hard
 *     interrupt context (a timer's wakeup), so possibly inside a syscall program's write;
 *   - a timer on its CPU (on_timer, hard interrupt context), likewise;
 *   - the CPU it left without an event (left_unseen), while it may come in elsewhere;
 *   - a thread renaming it, on any CPU.
 * Writers can overlap, so each claims the record through seq before writing (seqclaim.h):
 * a compare-and-exchange makes seq odd and names the writing CPU, and only the claimant
 * writes until it makes seq even again. The thread's own events wait for another CPU's
 * write; repairs and the timer's refresh back off from any; a writer that finds its own
 * CPU's claim (it interrupted a write) backs off. So no interleaving leaves seq odd, and a
 * copy user space takes while seq stays even and unchanged is whole. Aligned to a cache
 * line so two CPUs never write the same line for two threads.
 *
 * The state at the tick: user space sets tick_ns (a global) to the next tick's instant
 * before it comes. The first write to a record at or after that instant copies the live
 * view into at_tick and sets the record's tick_ns, so however late user space reads, it
 * finds each thread's view as of the tick: at_tick if the record moved since, else live.
 */
struct record {
	__u32 seq;
	__u32 tid;       /* 0: free slot */
	__u32 tgid;
	__u16 exec_gen;  /* bumped by every exec, so user space refreshes process context */
	__u8 stacks_at_tick; /* 1: at_tick's stacks were taken on CPU at the tick (on_timer) */
	__u8 split_estimated; /* hook-free mode: its sleeping and D are their sum split by the states seen */
	__u64 start_ns;  /* task start time (CLOCK_MONOTONIC): tells a reused tid apart */
	__u64 cgroup_id; /* cgroup v2 id (the inode of its cgroupfs directory) */
	__u64 exec_ns;   /* the task's se.sum_exec_runtime at the last switch seen (in or out) */
	__u64 tick_ns;   /* the tick at_tick is for; 0: none */
	__u8 comm[16];
	struct tc_view live;
	struct tc_view at_tick;
} __attribute__((aligned(64)));

/* Task-local storage: where a thread's record lives. */
struct task_slot {
	__u32 slot;     /* index + 1 into the records array; 0: none */
	__u32 untracked; /* a record was refused; retried at switch-in only */
};

/*
 * Spans: what an application was doing, between a start and an end probe (USDT or
 * uprobe), and how the thread spent that wall time. Only the probes' own programs and
 * the thread-exit hook touch these; struct record is unchanged.
 */

#define TC_SPAN_DEPTH 4     /* spans open at once per thread: a fixed stack */
/* Frame indexes are masked with TC_SPAN_DEPTH - 1 for the verifier: a power of two only. */
_Static_assert((TC_SPAN_DEPTH & (TC_SPAN_DEPTH - 1)) == 0, "TC_SPAN_DEPTH must be a power of two");
#define TC_SPAN_TEXT 128    /* bytes of a start's string argument kept, NUL included */
#define TC_MAX_SPANS 64     /* span ids 0..TC_MAX_SPANS-1 */
#define TC_MAX_PROBES 256   /* probe sites attached, each with its own cookie */
#define TC_SPAN_BUCKETS TC_HIST_BUCKETS /* log2 histogram buckets (histogram.h) */
#define TC_SPAN_PARTS 4     /* on CPU, runnable, sleeping (stopped too), uninterruptible */

/* Where a probe's argument is: a constant, a user register, or memory at a register plus
 * an offset (the USDT argument forms "4@$5", "-4@%eax", "8@-16(%rbp)"). */
enum tc_arg_kind : __u8 {
	TC_ARG_NONE = 0,
	TC_ARG_CONST = 1,
	TC_ARG_REG = 2,
	TC_ARG_MEM = 3,
};

struct tc_arg {
	__s64 value;    /* the constant, or the memory offset */
	__u16 reg_off;  /* byte offset of the register in struct pt_regs */
	enum tc_arg_kind kind;
	__u8 size;      /* 1, 2, 4 or 8 bytes */
	__u8 is_signed;
	__u8 pad[3];
};

/* One attached probe site, found by its attach cookie (the index in span_probes). */
struct tc_probe {
	__u16 span;     /* which span it starts or ends */
	__u8 end;       /* 0: starts the span, 1: ends it */
	__u8 pad[5];
	struct tc_arg int_arg;  /* at a start: the integer captured */
	struct tc_arg text_arg; /* at a start: the address of the string captured */
};

/* An open span: when it began and the thread's cumulative times then. */
struct tc_span_frame {
	__u64 start_ns;
	__u64 part_ns[TC_SPAN_PARTS];
	__s64 int_arg;
	__u16 span;
	__u16 pad;
	__u32 nvcsw; /* the thread's voluntary switches then, in the hook-free mode */
	__u8 text[TC_SPAN_TEXT];
};

/*
 * A thread's open spans, innermost last; created at its first span, deleted when the
 * thread exits. Only the thread's own probes write it; seq is odd while one does. User
 * space reads it by syscall, whose copy may interleave with a write however seq falls in
 * it, so it takes two copies and keeps them only when they are equal and even (see
 * bpf/spans.go).
 *
 * The span at the tick, as struct record keeps the view at the tick: the first probe hit
 * at or after tick_ns (the global) copies the innermost open span into at_tick before
 * changing anything, so however many spans the thread opens and closes before user space
 * reads, the row of that tick shows the span the thread was in at the instant.
 */
struct tc_span_thread {
	__u32 seq;
	__u32 tid;
	__u64 task_start_ns;
	__u64 tick_ns;  /* the tick at_tick is for; 0: none */
	__u8 depth;     /* frames in use */
	__u8 skipped;   /* starts beyond TC_SPAN_DEPTH, whose ends are ignored */
	__u8 at_tick_open; /* 1: at_tick holds the innermost span open at tick_ns; 0: none was */
	__u8 pad[5];
	struct tc_span_frame at_tick;
	struct tc_span_frame frames[TC_SPAN_DEPTH];
};

/* Per span and CPU, cumulative since load: spans ended, their wall time and its split. */
struct tc_span_stats {
	__u64 count;
	__u64 wall_ns;
	__u64 part_ns[TC_SPAN_PARTS];
	__u64 wall_hist[TC_SPAN_BUCKETS]; /* bucket b > 0: [2^(b-1), 2^b) µs; 0: under 1 µs */
	__u64 cpu_hist[TC_SPAN_BUCKETS];
};

#endif /* __THREADCAP_H__ */
