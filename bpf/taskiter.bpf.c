// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * The hook-free mode (syscalls: tick): no program on any scheduler, syscall, timer or idle
 * hook. At each tick user space runs this task iterator once; it reads every task and
 * writes its record in threadcap.bpf.c's records array (shared with the loader's
 * MapReplacements), so that the sampler reads rows exactly as it does in the other modes.
 *
 * What a visit knows is the task's state at the visit and the kernel's own cumulative
 * counters: se.sum_exec_runtime (CPU time), sched_info.run_delay (completed waits for a
 * CPU), nvcsw/nivcsw. A record's times are cumulative at the ticks, the CPU and runnable
 * ones the kernel's; the rest of each interval (neither running nor a completed wait) is
 * given to the off-CPU state seen at its end, else at its start, else to sleeping when the
 * thread slept in between (a voluntary switch), else to runnable (a wait still in progress,
 * which the kernel counts once it ends: the next interval gives it back).
 *
 * The record's view is laid out so that the sampler's arithmetic (state_ns up to since_ns,
 * plus the stretch since) gives those cumulative times at the tick: since_ns is the first
 * tick at which the thread was seen in its state with no switch since, and state_ns of
 * the current state is stored less that stretch. A thread asleep with no switch since the
 * last write needs no write at all: the stretch grows with the ticks, as its time does.
 *
 * A pass reads the tasks one after another, and the reading thread may wait for a CPU
 * between two: the pass is spread over time. It begins by reading which task each CPU
 * runs (begin_pass): those are the tasks on a CPU in this tick's records, one per CPU, of
 * one instant. And the counts read after the tick hold CPU time from after it: a pass
 * shows no more CPU time than the online CPUs had since the previous tick, and the rest
 * at the next (update_record).
 *
 * Exits: a task no longer in the kernel's task list is not visited; the final call of an
 * iteration (task NULL) marks every record not visited at this tick dead, as of the last
 * tick it was seen. A zombie still listed is marked dead at its visit, with its final counts.
 */
#include "include/vmlinux.h"
#include "include/bpf_helpers.h"
#include "include/bpf_tracing.h"
#include "include/bpf_core_read.h"
#include "threadcap.h"
#include "seqclaim.h"
#include "mapiter.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* task->__state bits (include/linux/sched.h). */
#define TASK_UNINTERRUPTIBLE 0x0002
#define __TASK_STOPPED 0x0004
#define __TASK_TRACED 0x0008
#define TASK_DEAD 0x0080
#define TASK_WAKING 0x0200
#define TASK_NOLOAD 0x0400
#define PF_KTHREAD 0x00200000
#define ENOSYS 38

/*
 * The task fields this object reads beyond vmlinux.h's. The ___tc flavour is matched to
 * the kernel's task_struct by CO-RE, which ignores the suffix.
 */
#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct thread_info___tc {
	__u32 cpu;
};
struct sched_info___tc {
	unsigned long long run_delay;
};
struct task_struct___tc;
struct rq___tc {
	struct task_struct___tc *curr;
	int cpu;
	int online;
	__u64 clock;
};
/* The kernel's per-task sleep counts, kept when it is built with CONFIG_SCHEDSTATS and
 * counting while kernel.sched_schedstats is 1. */
struct sched_statistics___tc {
	__u64 block_start;
	__u64 sum_block_runtime;
};
/* A task's cfs_rq (CONFIG_FAIR_GROUP_SCHED, which every distribution's kernel has) is
 * the one of its CPU, in its group: its rq is that CPU's runqueue. */
struct cfs_rq___tc {
	struct rq___tc *rq;
};
struct sched_entity___tc {
	__u64 sum_exec_runtime;
	struct cfs_rq___tc *cfs_rq;
};
struct task_struct___tc {
	struct thread_info___tc thread_info;
	unsigned int __state;
	int on_cpu;
	struct sched_entity___tc se;
	struct sched_info___tc sched_info;
	unsigned int flags;
	int exit_state;
	__u64 start_time;
	pid_t pid;
	pid_t tgid;
	unsigned long nvcsw;
	unsigned long nivcsw;
	__u64 self_exec_id;
	char comm[16];
	struct css_set *cgroups;
	struct sched_statistics___tc stats;
};
struct bpf_iter_meta;
struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
};
#pragma clang attribute pop

/* The open-coded task iterator (Linux 6.7): walk_tasks reads every thread in one run. */
struct bpf_iter_task {
	__u64 __opaque[3];
} __attribute__((aligned(8)));
#define BPF_TASK_ITER_ALL_THREADS 1
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task, unsigned int flags) __ksym __weak;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym __weak;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym __weak;

volatile const __u32 capacity = 1; /* = max_entries of records */
volatile const __u32 nr_cpus = 1;  /* = max_entries of cpus and on_cpu_at_pass */
/* kernel.sched_schedstats was 1 when user space loaded this: see split_off_cpu. */
volatile const __u32 schedstats = 0;

/* The tick this iteration is for (CLOCK_MONOTONIC ns), set by user space before it runs. */
__u64 tick_ns = 0;
/* The tick of the previous iteration: a record untouched since then was quiet until it. */
__u64 prev_tick_ns = 0;
/* Slots handed out so far; user space copies it to threadcap.bpf.c's slots_used. */
__u64 slots_used = 0;
/*
 * The pass for tick_ns: when it began (CLOCK_MONOTONIC ns), by reading every CPU's
 * current task, and how long it took, to its last call. Threads' states and counters are
 * read one after another over that span; which threads were on a CPU, at its beginning.
 */
static __u64 pass_tick_ns;
static __u32 pass_pos; /* read_tasks's tasks so far in this pass */
static __u64 pass_began_ns;
__u64 pass_ns = 0;
/* The CPU time this pass may still show: the online CPUs' time since the previous tick. */
static __u64 cpu_budget;
/*
 * The records of threads alive at their last visit (as of the last sweep, which counts
 * them, and the visits since), and how many of them this pass has seen: when it has seen
 * them all, no thread is gone and the pass ends with no sweep.
 */
static __u64 live_records;
static __u64 seen_live;

/* Shared with threadcap.bpf.c: replaced at load by its maps (same definitions). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct record);
	__uint(max_entries, 1);
} records SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__type(value, __u32);
	__uint(max_entries, 1);
} free_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_slot);
} task_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, enum tc_counter);
	__type(value, __u64);
	__uint(max_entries, TC_NR_COUNTERS);
} counters SEC(".maps");

/* Each CPU's runqueue (the address of its struct rq, learned from a task queued there),
 * and the thread that was current on it when the last pass began (0: none). */
struct tc_cpu {
	__u64 rq;
	__u32 curr;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct tc_cpu);
	__uint(max_entries, 1);
} cpus SEC(".maps");

/* The threads on a CPU when this pass began, by tid: which CPU (start_time tells a tid
 * reused meanwhile apart). */
struct tc_on_cpu {
	__u64 start_time;
	__u32 cpu;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct tc_on_cpu);
	__uint(max_entries, 1);
} on_cpu_at_pass SEC(".maps");

/*
 * The slots the sampler reads at this tick, to_read[0, to_read_n): every record but those
 * of threads asleep or stopped since before the previous tick, which the sampler would
 * skip (bpf/records.go's quiet) and which the pass leaves alone. So a tick's reads follow
 * the threads that moved, not all threads. Memory-mapped by user space.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64); /* an array's values are 8 bytes apart whatever their size */
	__uint(max_entries, 1);
} to_read SEC(".maps");

__u64 to_read_n = 0;

/* Lists slot idx for the sampler, whose record is in state st since since_ns. Called
 * once per record and pass, when the pass has seen its thread or marked it dead. */
static __always_inline void read_at_tick(__u32 idx, __u8 st, __u64 since_ns)
{
	__u32 n = to_read_n;
	__u64 *e;

	if ((st == TC_SLEEPING || st == TC_STOPPED) && since_ns < prev_tick_ns)
		return;
	e = bpf_map_lookup_elem(&to_read, &n);
	if (!e)
		return; /* never: a slot is listed once a pass, and there are capacity of them */
	*e = idx;
	to_read_n = n + 1;
}

/* What walk_tasks iterates over: one element, for one call. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} one_pass SEC(".maps");

/* This object's own. The tick each slot's thread was last visited at, by slot. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} seen_at SEC(".maps");

/* What a task's last write knew: the kernel's counters then and the cumulative times. */
struct tc_iter_task {
	__u64 tick_ns;   /* the tick of the last write */
	__u64 exec;      /* se.sum_exec_runtime then */
	__u64 run_delay; /* sched_info.run_delay then */
	__u64 cum[TC_TIMED_STATES]; /* cumulative time per state at tick_ns */
	__u64 pending;   /* the part of cum[TC_RUNNABLE] that is a wait run_delay has yet to count */
	__u64 carry_cpu, carry_run; /* counted by the kernel, beyond what the last interval held */
	__u64 exec_id;   /* self_exec_id: an exec changes it */
	__u32 base_nvcsw, base_nivcsw; /* the counts at first sight: records count from 0 */
	__u64 base_block; /* stats.sum_block_runtime at first sight, with schedstats */
	/* The task's slot (+1), and at the last write its switch counts and, when it was
	 * off a CPU, its __state (else QUIET_NEVER): what quiet() compares. */
	__u32 slot, nvcsw, nivcsw, quiet_state;
	__u8 last_target; /* the state the last time left over went to */
};

/* No task's __state: a thread last written on a CPU or runnable is never quiet. */
#define QUIET_NEVER 0xffffffff

/*
 * What quiet() compares, by the task's place in the pass: a pass finds the threads in the
 * order the last one did, but after one that came or went. So the place finds a thread's
 * last write with no lookup in its task storage, which is most of what a quiet visit
 * costs (an array read in order against three cache misses); a thread found elsewhere
 * takes the slow path, once.
 */
struct tc_quiet {
	__u64 task;       /* the task_struct's address */
	__u64 start_time; /* and its start: an address can be a new task's */
	__u64 since_ns;   /* the record's since_ns */
	__u32 nvcsw, nivcsw, state, slot;
	__u8 st;          /* the record's state */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct tc_quiet);
	__uint(max_entries, 1);
} quiet_at SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tc_iter_task);
} iter_tasks SEC(".maps");

/*
 * A state as an index into a per-state array, bounded in the register that indexes: a
 * bound checked earlier is on a register the compiler may spill and reload, which 6.1's
 * verifier then takes as any byte. Callers pass timed states only.
 */
static __always_inline __u32 state_index(__u32 st)
{
	asm volatile("%0 &= 7" : "+r"(st));
	return st;
}

static __always_inline void count(enum tc_counter which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/* Nothing else writes records in this mode; the claim keeps readers' protocol all the same. */
static __always_inline __u32 claim(struct record *r)
{
	__u32 c = seq_claim(&r->seq, bpf_get_smp_processor_id(), TC_CLAIM_WAIT);

	if (!c)
		count(TC_WRITE_CONFLICTS);
	return c;
}

static __always_inline bool off_cpu_state(__u8 st)
{
	return st == TC_SLEEPING || st == TC_UNINTERRUPTIBLE || st == TC_STOPPED;
}

/*
 * The state of a task: on a CPU if it was current on one when the pass began (that CPU
 * in *cpu), else as the visit finds it: waiting for a CPU, or its sleep's kind. A thread
 * running at the visit that was not on a CPU when the pass began was waiting for one.
 */
static __always_inline __u8 observed_state(struct task_struct___tc *task, __u32 *cpu, unsigned int *raw)
{
	unsigned int s = task->__state;
	__u32 tid = task->pid;
	struct tc_on_cpu *on = bpf_map_lookup_elem(&on_cpu_at_pass, &tid);

	*raw = s;
	if (on && on->start_time == task->start_time) {
		*cpu = on->cpu;
		return TC_ON_CPU;
	}
	*cpu = task->thread_info.cpu;
	if (s == 0 || (s & TASK_WAKING))
		return TC_RUNNABLE;
	if (s & (__TASK_STOPPED | __TASK_TRACED))
		return TC_STOPPED;
	/* TASK_IDLE (uninterruptible + noload) is how idle kernel threads wait: not D. */
	if ((s & TASK_UNINTERRUPTIBLE) && !(s & TASK_NOLOAD))
		return TC_UNINTERRUPTIBLE;
	return TC_SLEEPING;
}

/* The syscall an off-CPU task is in, from the user registers saved at kernel entry (as
 * threadcap.bpf.c's read_syscall): NO_SYSCALL for a kernel thread or outside one. */
static __always_inline __s32 saved_syscall(struct task_struct___tc *task, __u64 *args)
{
	struct pt_regs *regs;
	long nr;

	if (task->flags & PF_KTHREAD)
		return TC_NO_SYSCALL;
	regs = (struct pt_regs *)bpf_task_pt_regs((struct task_struct *)task);
	if (!regs)
		return TC_NO_SYSCALL;
#if defined(__TARGET_ARCH_x86)
	nr = regs->orig_ax;
	if (nr < 0 || regs->ax != (unsigned long)-ENOSYS)
		return TC_NO_SYSCALL;
	args[0] = regs->di;
	args[1] = regs->si;
	args[2] = regs->dx;
	args[3] = regs->r10;
	args[4] = regs->r8;
	args[5] = regs->r9;
#else
	nr = regs->syscallno;
	if (nr < 0)
		return TC_NO_SYSCALL;
	args[0] = regs->orig_x0;
	args[1] = regs->regs[1];
	args[2] = regs->regs[2];
	args[3] = regs->regs[3];
	args[4] = regs->regs[4];
	args[5] = regs->regs[5];
#endif
	return nr;
}

/* The process context a write refreshes: tid and tgid change at a non-leader's exec. */
static __always_inline void write_identity(struct record *r, struct task_struct___tc *task)
{
	r->tid = task->pid;
	r->tgid = task->tgid;
	r->cgroup_id = task->cgroups->dfl_cgrp->kn->id;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), task->comm);
}

/*
 * Writes the view of the thread at tick from the cumulative times in it, in state st.
 * since_ns moves to the tick on a change of state or a switch (the state began somewhere
 * in the interval); otherwise the thread has been in st since at least since_ns.
 */
static __always_inline void write_view(struct record *r, struct task_struct___tc *task,
				       struct tc_iter_task *it, __u8 st, unsigned int raw, __u32 cpu,
				       bool moved, __u64 tick)
{
	struct tc_view *v = &r->live;
	__u32 nv = task->nvcsw, niv = task->nivcsw;
	__u64 args[6] = {};
	__s32 nr;
	int i;

	if (moved || st != v->state) {
		v->prev_state = v->state;
		v->since_ns = tick;
	}
	v->state = st;
	for (i = 0; i < TC_TIMED_STATES; i++)
		v->state_ns[i] = it->cum[i];
	/* The sampler adds the stretch since since_ns to the current state. */
	if (st < TC_TIMED_STATES)
		v->state_ns[state_index(st)] -= tick - v->since_ns;
	v->cpu_ns = it->cum[TC_ON_CPU];
	v->cpu_at_ns = tick;
	v->nvcsw = nv - it->base_nvcsw;
	v->nivcsw = niv - it->base_nivcsw;
	v->cpu = cpu;
	nr = TC_NO_SYSCALL;
	if (st != TC_ON_CPU && st != TC_DEAD)
		nr = saved_syscall(task, args);
	/* The same syscall with no switch since: the same call, in it since at least then. */
	if (nr != v->sc_nr || moved) {
		v->sc_enter_ns = tick;
		v->sc_on_cpu_ns = it->cum[TC_ON_CPU];
	}
	v->sc_nr = nr;
	for (i = 0; i < 6; i++)
		v->sc_args[i] = args[i];
	/* The counts the record has: a switch after these reads is not quiet. */
	it->nvcsw = nv;
	it->nivcsw = niv;
	it->quiet_state = off_cpu_state(st) ? raw : QUIET_NEVER;
}

/* Notes that the thread of a live record was seen at tick: true the first time. */
static __always_inline bool see(__u64 *seen, __u64 tick)
{
	bool first = *seen != tick;

	if (first)
		seen_live++;
	*seen = tick;
	return first;
}

/* Whether split_off_cpu splits this thread's time off CPU by the kernel's counts. */
static __always_inline bool split_counted(struct task_struct___tc *task)
{
	return schedstats && bpf_core_field_exists(task->stats) && !(task->flags & PF_KTHREAD);
}

/* Gives a task seen for the first time a record, with no time in it yet. */
static __noinline void first_record(struct task_struct___tc *task, struct task_slot *ts,
				    struct tc_iter_task *it, __u64 tick)
{
	struct record *r;
	__u64 *seen;
	__u32 idx, c, cpu;
	unsigned int raw;
	int i;

	it->slot = 0;
	if (bpf_map_pop_elem(&free_slots, &idx)) {
		__u64 n = __sync_fetch_and_add(&slots_used, 1);

		if (n >= capacity) {
			__sync_fetch_and_sub(&slots_used, 1);
			if (!ts->untracked) {
				ts->untracked = 1;
				count(TC_UNTRACKED_THREADS);
			}
			count(TC_LOST_UPDATES);
			return;
		}
		idx = n;
	}
	r = bpf_map_lookup_elem(&records, &idx);
	seen = bpf_map_lookup_elem(&seen_at, &idx);
	if (!r || !seen)
		return;
	c = claim(r);
	if (!c) {
		bpf_map_push_elem(&free_slots, &idx, 0);
		return;
	}
	ts->slot = idx + 1;
	ts->untracked = 0;
	it->slot = idx + 1;
	it->tick_ns = tick;
	it->exec = task->se.sum_exec_runtime;
	it->run_delay = task->sched_info.run_delay;
	for (i = 0; i < TC_TIMED_STATES; i++)
		it->cum[i] = 0;
	it->pending = 0;
	it->carry_cpu = 0;
	it->carry_run = 0;
	it->last_target = TC_SLEEPING;
	it->exec_id = task->self_exec_id;
	it->base_nvcsw = task->nvcsw;
	it->base_nivcsw = task->nivcsw;
	it->base_block = 0;
	if (schedstats && bpf_core_field_exists(task->stats))
		it->base_block = task->stats.sum_block_runtime;

	write_identity(r, task);
	r->start_ns = task->start_time;
	r->exec_gen = 0;
	r->exec_ns = it->exec;
	r->tick_ns = 0; /* the live view is the view at the tick */
	r->stacks_at_tick = 0;
	r->split_estimated = !split_counted(task);
	r->live.state = observed_state(task, &cpu, &raw);
	r->live.prev_state = r->live.state;
	r->live.since_ns = tick;
	r->live.sc_nr = TC_NO_SYSCALL;
	r->live.last_sc_nr = TC_NO_SYSCALL;
	r->live.last_sc_ret = 0;
	r->live.kstack = 0;
	r->live.ustack = 0;
	write_view(r, task, it, r->live.state, raw, cpu, true, tick);
	seq_release(&r->seq, c);
	live_records++;
	if (see(seen, tick))
		read_at_tick(idx, r->live.state, r->live.since_ns);
}

static __always_inline __u64 take(struct tc_iter_task *it, __u8 st, __u64 owed)
{
	__u64 n;
	__u32 i;

	if (st >= TC_TIMED_STATES)
		return owed;
	i = state_index(st);
	n = it->cum[i] < owed ? it->cum[i] : owed;
	it->cum[i] -= n;
	return owed - n;
}

/*
 * The kernel counted more CPU time and completed waits than the interval held: a wait
 * (or CPU time: sum_exec_runtime lags by up to a scheduler tick) that earlier intervals
 * gave to runnable as still in progress, or to the sleep seen at the tick before it. It is
 * taken back from there, then from any off-CPU state, never below nothing. Returns what
 * could not be taken back: the reads ran later than their ticks, by more than that.
 */
static __always_inline __u64 give_back(struct tc_iter_task *it, __u64 owed)
{
	__u64 n = it->pending < owed ? it->pending : owed;

	it->pending -= n;
	owed = take(it, TC_RUNNABLE, n) + owed - n;
	if (it->last_target != TC_RUNNABLE)
		owed = take(it, it->last_target, owed);
	owed = take(it, TC_SLEEPING, owed);
	owed = take(it, TC_UNINTERRUPTIBLE, owed);
	return take(it, TC_STOPPED, owed);
}

/*
 * With schedstats (kernel.sched_schedstats=1 when the iterator was loaded), a user
 * thread's time off CPU is split between sleeping and D by the kernel's own counts
 * instead of by the states seen at the ticks: its D is its sum_block_runtime since first
 * sight (the D episodes that ended: the kernel counts one as it ends), plus the part of
 * the one it is in, from its block_start on its runqueue's clock; sleeping is the rest of
 * the two. Stopped time stays as estimated (the kernel counts none), and so do kernel
 * threads: the kernel counts their idle waits (TASK_IDLE) as blocked, which threadcap
 * shows as sleeping. What a row showed of D is not taken back (a row never shows less
 * than nothing), and the current state keeps its stretch since since_ns (stretch).
 * Returns false when it left the split estimated: the record says so (split_estimated).
 */
static __always_inline bool split_off_cpu(struct task_struct___tc *task, struct tc_iter_task *it,
					  __u8 st, __u64 stretch, __u64 shown_d)
{
	__u64 tot = it->cum[TC_SLEEPING] + it->cum[TC_UNINTERRUPTIBLE], d, start, now;
	struct rq___tc *rq;
	struct tc_cpu *c;
	__u32 cpu;

	if (!split_counted(task))
		return false;
	d = task->stats.sum_block_runtime - it->base_block;
	start = task->stats.block_start;
	cpu = task->thread_info.cpu;
	c = bpf_map_lookup_elem(&cpus, &cpu);
	if (st == TC_UNINTERRUPTIBLE && start && c && c->rq) {
		rq = (struct rq___tc *)c->rq;
		now = BPF_CORE_READ(rq, clock);
		if (now > start)
			d += now - start;
	}
	if (d < shown_d)
		d = shown_d;
	if (st == TC_UNINTERRUPTIBLE && d < stretch)
		d = stretch;
	if (st == TC_SLEEPING && d > tot - stretch)
		d = tot - stretch;
	if (d > tot)
		d = tot;
	it->cum[TC_UNINTERRUPTIBLE] = d;
	it->cum[TC_SLEEPING] = tot - d;
	return true;
}

/*
 * Brings a known thread's record to tick. A thread asleep (or stopped) since its last
 * write, with no switch and no CPU time since, is left as it is: its view already says so.
 */
static __always_inline void update_record(struct record *r, struct task_struct___tc *task,
					  struct tc_iter_task *it, bool dead, __u64 tick)
{
	__u64 exec = task->se.sum_exec_runtime, run = task->sched_info.run_delay;
	__u32 nv = (__u32)task->nvcsw - it->base_nvcsw, niv = (__u32)task->nivcsw - it->base_nivcsw;
	__u32 c, cpu = task->thread_info.cpu;
	unsigned int raw = 0;
	__u8 old = r->live.state, st = dead ? TC_DEAD : observed_state(task, &cpu, &raw), target;
	bool slept = nv != r->live.nvcsw, moved = slept || niv != r->live.nivcsw;
	__u64 from = it->tick_ns, prev = prev_tick_ns, dcpu, drun;
	__u64 shown_d = it->cum[TC_UNINTERRUPTIBLE], since = r->live.since_ns;
	__s64 rest;
	bool counted;

	if (tick <= from)
		return; /* visited twice in one iteration */
	if (!dead && st == old && !moved && off_cpu_state(st) && exec == it->exec &&
	    run == it->run_delay && task->self_exec_id == it->exec_id && !it->carry_cpu &&
	    !it->carry_run)
		return;
	/* Quiet since the last write up to the previous iteration: in old all along. */
	if (prev > from && prev < tick) {
		if (old < TC_TIMED_STATES)
			it->cum[state_index(old)] += prev - from;
		from = prev;
	}
	dcpu = exec - it->exec + it->carry_cpu;
	drun = run - it->run_delay + it->carry_run;
	it->carry_run = 0;
	/* The kernel's counts, read after the tick, hold CPU time from after it: beyond what
	 * the CPUs had since the previous tick, it is shown at the next one. The threads read
	 * last in the pass, whose counts hold the most of it, are the ones that carry it (a
	 * thread that exited has no next row: what it carries is lost). So is what a thread
	 * ran beyond its own stretch: taken back from its earlier rows instead, it would be
	 * one CPU's time more than its interval, which the sampler can only carry over to
	 * ticks whose CPU time the pass has already given out. */
	it->carry_cpu = 0;
	if (dcpu > tick - from) {
		it->carry_cpu = dcpu - (tick - from);
		dcpu = tick - from;
	}
	if (dcpu > cpu_budget) {
		it->carry_cpu += dcpu - cpu_budget;
		dcpu = cpu_budget;
	}
	rest = (__s64)(tick - from) - (__s64)dcpu - (__s64)drun;
	if (rest < 0) {
		/* What cannot be taken back from earlier rows is shown in the next ones, so
		 * that every row adds up to its interval and the sums stay the kernel's. */
		__u64 owed = give_back(it, -rest);

		it->carry_run = drun < owed ? drun : owed;
		drun -= it->carry_run;
		owed -= it->carry_run;
		owed = dcpu < owed ? dcpu : owed;
		it->carry_cpu += owed;
		dcpu -= owed;
	}
	cpu_budget -= dcpu;
	it->cum[TC_ON_CPU] += dcpu;
	it->cum[TC_RUNNABLE] += drun;
	if (rest >= 0) {
		if (off_cpu_state(st))
			target = st;
		else if (off_cpu_state(old))
			target = old;
		else
			target = slept ? TC_SLEEPING : TC_RUNNABLE;
		if (target < TC_TIMED_STATES)
			it->cum[state_index(target)] += rest;
		if (target == TC_RUNNABLE)
			it->pending += rest;
		it->last_target = target;
	}
	if (moved || st != old)
		since = tick;
	counted = split_off_cpu(task, it, st, tick - since, shown_d);
	it->tick_ns = tick;
	it->exec = exec;
	it->run_delay = run;

	c = claim(r);
	if (!c)
		return;
	if (task->self_exec_id != it->exec_id) {
		it->exec_id = task->self_exec_id;
		r->exec_gen++;
	}
	write_identity(r, task);
	r->exec_ns = exec;
	r->split_estimated = !counted;
	write_view(r, task, it, st, raw, cpu, moved, tick);
	seq_release(&r->seq, c);
}

/* Learns the runqueue of the task's CPU, the first time a task is seen queued there. */
static __always_inline void learn_rq(struct task_struct___tc *task)
{
	__u32 cpu = task->thread_info.cpu;
	struct tc_cpu *c = bpf_map_lookup_elem(&cpus, &cpu);
	struct rq___tc *rq;

	if (!c || c->rq)
		return;
	rq = BPF_CORE_READ(task, se.cfs_rq, rq);
	/* A task migrating meanwhile may be on another CPU's queue already: its cpu says. */
	cpu = BPF_CORE_READ(rq, cpu);
	c = bpf_map_lookup_elem(&cpus, &cpu);
	if (rq && c)
		c->rq = (__u64)rq;
}

/*
 * A thread off a CPU at its last write, in the same __state, that has not left a CPU
 * since and is not on one: it has not run since, so neither its CPU time, nor its time
 * waiting for a CPU (counted when it gets one), nor its program (an exec runs) changed,
 * and it did not exit (it would have left a CPU). Its record already says all of it (as
 * update_record would find), so the visit only notes that it was seen. This is most
 * threads at most ticks, and these fields share two cache lines of the task_struct.
 */
static __always_inline bool quiet(struct task_struct___tc *task, struct tc_quiet *q, __u64 tick)
{
	__u32 idx = q->slot - 1;
	__u64 *seen;

	if (q->task != (__u64)task || !q->slot || q->state == QUIET_NEVER ||
	    task->__state != q->state || task->on_cpu || (__u32)task->nvcsw != q->nvcsw ||
	    (__u32)task->nivcsw != q->nivcsw || task->start_time != q->start_time)
		return false;
	seen = bpf_map_lookup_elem(&seen_at, &idx);
	if (!seen)
		return false;
	if (see(seen, tick))
		read_at_tick(idx, q->st, q->since_ns);
	return true;
}

/* Keeps what quiet() will compare at the next pass: the last write, as it knows it. */
static __always_inline void remember(struct tc_quiet *q, struct task_struct___tc *task,
				     struct tc_iter_task *it, struct record *r)
{
	q->task = (__u64)task;
	q->start_time = task->start_time;
	q->since_ns = r->live.since_ns;
	q->st = r->live.state;
	q->nvcsw = it->nvcsw;
	q->nivcsw = it->nivcsw;
	q->slot = it->slot;
	/* Time the kernel counted beyond the interval is shown at the next write. */
	q->state = it->carry_cpu || it->carry_run ? QUIET_NEVER : it->quiet_state;
}

/* One task of the iteration, the pos-th of its pass. */
static __always_inline void visit(struct task_struct___tc *task, __u64 tick, __u32 pos)
{
	struct task_struct *t = (struct task_struct *)task;
	struct tc_quiet *q = bpf_map_lookup_elem(&quiet_at, &pos);
	bool dead = task->exit_state != 0;
	struct tc_iter_task *it;
	struct task_slot *ts;
	struct record *r = NULL;
	__u64 *seen;
	__u32 idx = 0;

	if (q && quiet(task, q, tick))
		return;
	if (q)
		q->task = 0;
	if (!dead)
		learn_rq(task);
	/* A zombie not yet known is not worth a record: it will never run again. */
	ts = bpf_task_storage_get(&task_slots, t, 0, dead ? 0 : BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts)
		return;
	it = bpf_task_storage_get(&iter_tasks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!it) {
		count(TC_LOST_UPDATES);
		return;
	}
	if (ts->slot) {
		idx = ts->slot - 1;
		r = bpf_map_lookup_elem(&records, &idx);
		/* Its record given up (the exec of a non-leader takes the leader's start
		 * time) or freed: it starts afresh. */
		if (r && (r->start_ns != task->start_time || r->live.state == TC_DEAD || !r->tid))
			r = NULL;
	}
	if (!r) {
		if (dead)
			return;
		first_record(task, ts, it, tick);
		idx = it->slot - 1;
		r = it->slot ? bpf_map_lookup_elem(&records, &idx) : NULL;
		if (q && r)
			remember(q, task, it, r);
		return;
	}
	update_record(r, task, it, dead, tick);
	seen = bpf_map_lookup_elem(&seen_at, &idx);
	if (seen && r->live.state == TC_DEAD) {
		*seen = tick;
		live_records--;
		read_at_tick(idx, TC_DEAD, 0);
	} else if (seen && see(seen, tick)) {
		read_at_tick(idx, r->live.state, r->live.since_ns);
	}
	if (dead) {
		bpf_task_storage_delete(&task_slots, t);
		bpf_task_storage_delete(&iter_tasks, t);
	} else if (q) {
		remember(q, task, it, r);
	}
}

/* What a sweep is for, and the live records it finds. */
struct sweep {
	__u64 tick;
	__u64 live;
};

/* A record whose thread this iteration did not visit: the thread is gone. Its last
 * stretch, from the last tick it was seen at to its exit, is not known: none is counted. */
static long sweep_one(__u64 i, void *data)
{
	struct sweep *sw = data;
	__u64 tick = sw->tick, last;
	__u32 idx = i, c;
	struct record *r = bpf_map_lookup_elem(&records, &idx);
	__u64 *seen = bpf_map_lookup_elem(&seen_at, &idx);
	struct tc_view *v;
	__u8 old;

	if (!r || !seen)
		return 1;
	if (!r->tid || r->live.state == TC_DEAD)
		return 0;
	sw->live++;
	if (*seen == tick)
		return 0;
	c = claim(r);
	if (!c)
		return 0;
	sw->live--;
	v = &r->live;
	last = *seen;
	old = v->state;
	if (old < TC_TIMED_STATES && last > v->since_ns)
		v->state_ns[state_index(old)] += last - v->since_ns;
	v->prev_state = old;
	v->state = TC_DEAD;
	v->since_ns = last;
	v->sc_nr = TC_NO_SYSCALL;
	seq_release(&r->seq, c);
	read_at_tick(idx, TC_DEAD, last);
	return 0;
}

/* Forgets which thread was on the CPU i when the last pass began. */
static long forget_cpu(__u64 i, void *data)
{
	__u32 cpu = i;
	struct tc_cpu *c = bpf_map_lookup_elem(&cpus, &cpu);

	if (!c)
		return 1;
	if (c->curr)
		bpf_map_delete_elem(&on_cpu_at_pass, &c->curr);
	c->curr = 0;
	return 0;
}

/* Notes the thread current on the CPU i, and counts the CPU in *data if it is online. */
static long read_cpu(__u64 i, void *data)
{
	__u32 cpu = i, tid;
	struct tc_cpu *c = bpf_map_lookup_elem(&cpus, &cpu);
	struct tc_on_cpu on = {.cpu = cpu};
	struct task_struct___tc *curr;
	struct rq___tc *rq;

	if (!c)
		return 1;
	if (!c->rq)
		return 0;
	rq = (struct rq___tc *)c->rq;
	if (BPF_CORE_READ(rq, online))
		*(__u32 *)data += 1;
	curr = BPF_CORE_READ(rq, curr);
	tid = BPF_CORE_READ(curr, pid);
	if (!tid)
		return 0; /* the CPU's idle task */
	on.start_time = BPF_CORE_READ(curr, start_time);
	if (!bpf_map_update_elem(&on_cpu_at_pass, &tid, &on, BPF_ANY))
		c->curr = tid;
	return 0;
}

/*
 * A pass begins by reading which thread is current on each CPU: those reads are
 * microseconds apart, within one run of this program, where the visits that follow are
 * spread over the pass (the reading thread may wait for a CPU between two). So on-CPU
 * threads are those of one instant, one per CPU, however long the pass. The reading
 * thread is on its own CPU then: that CPU shows threadcap.
 */
static __always_inline void begin_pass(__u64 tick)
{
	__u32 online = 0;

	pass_began_ns = bpf_ktime_get_ns();
	seen_live = 0;
	to_read_n = 0;
	bpf_loop(nr_cpus, forget_cpu, NULL, 0);
	bpf_loop(nr_cpus, read_cpu, &online, 0);
	/* No runqueue known (none learned yet): no bound. */
	cpu_budget = ~0ULL;
	if (online && prev_tick_ns && tick > prev_tick_ns)
		cpu_budget = online * (tick - prev_tick_ns);
	pass_tick_ns = tick;
	pass_pos = 0;
}

/* The pass's end: every thread still there has been seen; the records of the others
 * are marked dead, unless every live record's thread was seen. */
static __always_inline void end_pass(__u64 tick)
{
	struct sweep sw = {.tick = tick};
	__u64 n = slots_used;

	if (n > capacity)
		n = capacity;
	if (seen_live != live_records) {
		bpf_loop(n, sweep_one, &sw, 0);
		live_records = sw.live;
	}
	pass_ns = bpf_ktime_get_ns() - pass_began_ns;
	prev_tick_ns = tick;
}

/*
 * The pass of kernels before 6.7, one call per task. The kernel finds each next task by
 * its pid and takes a reference to it, which costs several times what a visit does.
 */
SEC("iter/task")
int read_tasks(struct bpf_iter__task *ctx)
{
	struct task_struct___tc *task = (void *)ctx->task;
	__u64 tick = tick_ns;

	if (!tick)
		return 0;
	if (pass_tick_ns != tick)
		begin_pass(tick);
	if (!task)
		end_pass(tick);
	else if (task->pid)
		visit(task, tick, pass_pos++);
	return 0;
}

/*
 * visit as a function of its own (global: the verifier checks it once, not at every turn
 * of walk_tasks's loop, which it could not follow to the end). Its task is one the
 * iterator handed out, under RCU: trusted (Linux 6.8 reads the tag).
 */
__noinline int visit_task(struct task_struct *t __attribute__((btf_decl_tag("arg:trusted"))), __u64 tick,
		       __u32 pos)
{
	visit((struct task_struct___tc *)t, tick, pos);
	return 0;
}

/*
 * The pass from 6.7 on: one call, over a map of one element, that walks the kernel's list
 * of threads itself (bpf_iter_task), following pointers under RCU, with nothing taken or
 * looked up per task.
 */
SEC("iter/bpf_map_elem")
int walk_tasks(struct bpf_iter__bpf_map_elem *ctx)
{
	struct bpf_iter_task it;
	struct task_struct *t;
	__u64 tick = tick_ns;
	__u32 pos = 0;

	if (!tick || !ctx->key || prev_tick_ns == tick)
		return 0;
	begin_pass(tick);
	bpf_iter_task_new(&it, NULL, BPF_TASK_ITER_ALL_THREADS);
	while ((t = bpf_iter_task_next(&it)))
		if (t->pid)
			visit_task(t, tick, pos++);
	bpf_iter_task_destroy(&it);
	end_pass(tick);
	return 0;
}
