// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * threadcap's kernel side: keep, for every thread, one always-current record of what it
 * is doing and how long it has spent in each state. Nothing is streamed: the programs
 * overwrite records in a memory-mapped array that the sampler reads in place.
 *
 * Per event the cost is one task-storage lookup (a pointer chase from the task), one
 * inlined array lookup and a handful of stores: no hash maps, no locks, no copies.
 */
#include "include/vmlinux.h"
#include "include/bpf_helpers.h"
#include "include/bpf_tracing.h"
#include "include/bpf_core_read.h"
#include "threadcap.h"
#include "seqclaim.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* task->__state and task->flags bits (include/linux/sched.h). */
#define TASK_UNINTERRUPTIBLE 0x0002
#define __TASK_STOPPED 0x0004
#define __TASK_TRACED 0x0008
#define TASK_DEAD 0x0080
#define TASK_NOLOAD 0x0400
#define PF_KTHREAD 0x00200000
#define ENOSYS 38

/* Set by the loader before the programs are loaded. */
volatile const __u32 capacity = 1;       /* = max_entries of records */
volatile const __u8 passive_syscalls = 0; /* no raw_syscalls hooks: read saved registers */
volatile const __u8 stack_states = 0; /* bit 1 << state: capture stacks on switching out to it */
volatile const __u8 user_stacks = 0;  /* capture the user stack too (frame-pointer walk) */
/* Which stacks of the thread on CPU at a tick to capture: TC_TICK_* bits. */
volatile const enum tc_tick_stack tick_stacks = 0;
/* Kernel stacks of the states in stack_states walked only for the episodes a tick sees
 * (see walk_at_end), not at every switch-out; user space sets it when no user stack is
 * taken off CPU and the sampler can walk the episodes still open (kstackask.bpf.c). */
volatile const __u8 deferred_stacks = 0;

/* Slots handed out so far, never given back: the high-water mark of the array. */
__u64 slots_used = 0;

/*
 * The next tick's instant (CLOCK_MONOTONIC ns), written by user space through the
 * memory-mapped .bss before the tick comes; 0 before the first. See struct record.
 */
__u64 tick_ns = 0;

/* Kernel 6.2 and newer; weak, so that older kernels load without them (see left_unseen). */
extern struct task_struct *bpf_task_from_pid(__s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;

/* The records, indexed by slot. Sized at load time; user space mmaps it. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct record);
	__uint(max_entries, 1);
} records SEC(".maps");

/* Slots of exited threads, given back by user space after it has read their last record. */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__type(value, __u32);
	__uint(max_entries, 1);
} free_slots SEC(".maps");

/*
 * Stacks of threads switched out to a state in stack_states, each distinct stack stored
 * once; records keep its id. Sized at load time. A stack never replaces another in its
 * bucket (no BPF_F_REUSE_STACKID), so an id means the same stack until user space deletes
 * it, which it does only for ids no record holds; a stack whose bucket holds another is
 * counted as lost instead.
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, TC_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 1);
} stacks SEC(".maps");

/*
 * Kernel stacks of episodes that spanned a tick, walked as they ended (walk_at_end), by
 * thread id; user space takes them at the tick's read and deletes them. A full map loses
 * the stack (TC_LOST_STACKS).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct tc_tick_kstack);
	__uint(max_entries, 4096);
} tick_kstacks SEC(".maps");

/* Where walk_at_end builds an entry: too big for the BPF stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct tc_tick_kstack);
	__uint(max_entries, 1);
} kstack_scratch SEC(".maps");

/* Each task's slot: task storage is a pointer hop from the task, cheaper than any hash. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_slot);
} task_slots SEC(".maps");

/*
 * The slot (+1; 0: unknown) of the task running on each CPU, set at every switch-in. The
 * syscall hooks and the switch-out of that task find its record here with two inlined
 * array lookups instead of a task-storage helper call: that halves the cost of full mode.
 * Nothing but a context switch changes the task on a CPU, and every switch-in rewrites it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} cpu_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, enum tc_counter);
	__type(value, __u64);
	__uint(max_entries, TC_NR_COUNTERS);
} counters SEC(".maps");

static __always_inline void count(enum tc_counter which)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &which);

	if (c)
		*c += 1;
}

/*
 * Claims r for a write from this CPU (see seqclaim.h and threadcap.h): the claimed seq for
 * write_end, or 0 when r must not be written. A thread's own event that could not be
 * written (TC_CLAIM_WAIT) is counted: it is a state change the record misses.
 */
static __always_inline __u32 claim(struct record *r, enum tc_claim_mode mode)
{
	__u32 c = seq_claim(&r->seq, bpf_get_smp_processor_id(), mode);

	if (!c && mode == TC_CLAIM_WAIT)
		count(TC_WRITE_CONFLICTS);
	return c;
}

/*
 * Opens a write to r, made at now. The first write at or after the tick keeps the view as
 * it stood at the tick: a comparison per event, a copy per thread and tick at most.
 */
static __always_inline void keep_tick(struct record *r, __u64 now)
{
	__u64 tick = tick_ns;

	if (tick && now >= tick && r->tick_ns != tick) {
		__builtin_memcpy(&r->at_tick, &r->live, sizeof(r->live));
		r->tick_ns = tick;
		r->stacks_at_tick = 0;
	}
}

/* Claims r and keeps its view at the tick as of now: 0 when r must not be written. */
static __always_inline __u32 write_begin(struct record *r, __u64 now, enum tc_claim_mode mode)
{
	__u32 c = claim(r, mode);

	if (c)
		keep_tick(r, now);
	return c;
}

/*
 * A write that first repairs the record's past (a switch it was not told of, see
 * unseen_switch_out) opens with claim alone: the repair keeps the view at the tick as
 * of the instant it puts right, before changing anything, and the caller keeps it as of
 * now after the repair. A repair at an instant before the tick thus shows at the tick;
 * opened with write_begin(now), the tick would keep the record as it stood unrepaired,
 * a thread on a CPU another thread had.
 */

#define write_end(r, c) seq_release(&(r)->seq, c)

/* Moves a record to state st at now, adding the time spent in the state it leaves. */
static __always_inline void enter_state(struct record *r, __u8 st, __u64 now)
{
	struct tc_view *v = &r->live;
	__u8 old = v->state;

	if (old < TC_TIMED_STATES && now > v->since_ns)
		v->state_ns[old] += now - v->since_ns;
	v->prev_state = old;
	v->state = st;
	v->since_ns = now;
}

static __always_inline __u8 state_of(bool preempt, unsigned int prev_state)
{
	if (preempt || prev_state == 0)
		return TC_RUNNABLE;
	if (prev_state & (__TASK_STOPPED | __TASK_TRACED))
		return TC_STOPPED;
	/* TASK_IDLE (uninterruptible + noload) is how idle kernel threads wait: not D. */
	if ((prev_state & TASK_UNINTERRUPTIBLE) && !(prev_state & TASK_NOLOAD))
		return TC_UNINTERRUPTIBLE;
	return TC_SLEEPING;
}

/*
 * Some context switches reach no sched_switch event. On this project's 6.18 test machines
 * the kernel emits no event while one process (the VM's own agent, pid 1) is current: in
 * tracefs's sched_switch too, its threads are switched in and never out, and whatever is
 * switched in after them arrives unseen. Trusting the events alone, such a thread stayed
 * on CPU in its record and was credited with CPU time it never used. So each record also
 * keeps the kernel's own CPU time of its thread (se.sum_exec_runtime, what schedstat
 * shows) at the last switch seen, and whenever an event shows that a switch was missed,
 * the time since is split by how long the thread really ran.
 */

/* Since when the record accounts for its thread's CPU time: its state's start, or for a
 * thread on CPU, the last time a timer brought its count up to date, if later. */
static __always_inline __u64 counted_to(struct record *r)
{
	__u64 at = r->live.cpu_at_ns, since = r->live.since_ns;

	return at > since ? at : since;
}

/* How long the kernel says the thread ran since counted_to, at most the time since: the
 * kernel may charge a woken thread from a little before it came in. */
static __always_inline __u64 ran_since(struct record *r, struct task_struct *task, __u64 now)
{
	__u64 ran = task->se.sum_exec_runtime - r->exec_ns, from = counted_to(r);

	if (now <= from)
		return 0;
	return ran < now - from ? ran : now - from;
}

/* Its thread left the CPU unseen: it ran on from counted_to for as long as the kernel
 * says, then was in off until now. */
static __always_inline void unseen_switch_out(struct record *r, struct task_struct *task,
					      __u8 off, __u64 now)
{
	__u64 ran = task->se.sum_exec_runtime - r->exec_ns;
	__u64 left = counted_to(r) + ran_since(r, task, now);

	keep_tick(r, left);
	enter_state(r, off, left);
	r->live.cpu_ns += ran;
	r->live.cpu_at_ns = left;
	r->exec_ns = task->se.sum_exec_runtime;
	if (off == TC_RUNNABLE)
		r->live.nivcsw++;
	else
		r->live.nvcsw++;
	count(TC_UNSEEN_SWITCHES);
}

/* When the running task came in: its switch-in, or if that was unseen, as long before now
 * as the kernel counts it has run since the last switch seen. */
static __always_inline __u64 came_in(struct record *r, struct task_struct *task, __u64 now)
{
	if (r->live.state == TC_ON_CPU || now <= r->live.since_ns)
		return r->live.since_ns;
	return now - ran_since(r, task, now);
}

/* Its thread, leaving the CPU, came in unseen: it has been on CPU for the time the kernel
 * counted since the last switch seen. */
static __always_inline void unseen_switch_in(struct record *r, struct task_struct *task,
					     __u64 now)
{
	__u64 in = came_in(r, task, now);

	keep_tick(r, in);
	enter_state(r, TC_ON_CPU, in);
	r->live.cpu = bpf_get_smp_processor_id();
	count(TC_UNSEEN_SWITCHES);
}


/*
 * The task's cgroup v2 id, the key user space resolves to a path. Four loads through
 * pointers the scheduler has just used (the css_set is where CPU accounting goes), so
 * they cost next to nothing at switch-out, where a move to another cgroup becomes visible.
 */
static __always_inline __u64 cgroup_of(struct task_struct *task)
{
	return task->cgroups->dfl_cgrp->kn->id;
}

/*
 * Gives a task its first record. assumed is the state the event implies the task was in
 * just before it (the event then applies its transition as usual, adding no time).
 */
static __noinline struct record *record_claim(struct task_struct *task, struct task_slot *ts,
					      __u8 assumed)
{
	__u64 now = bpf_ktime_get_ns();
	struct tc_view *v;
	struct record *r;
	__u32 idx, c;
	int i;

	if (bpf_map_pop_elem(&free_slots, &idx)) {
		__u64 n = __sync_fetch_and_add(&slots_used, 1);

		if (n >= capacity) {
			if (!ts->untracked) {
				ts->untracked = 1;
				count(TC_UNTRACKED_THREADS);
			}
			count(TC_LOST_UPDATES);
			return NULL;
		}
		idx = n;
	}
	r = bpf_map_lookup_elem(&records, &idx);
	if (!r)
		return NULL;
	/* Nobody writes a free slot, but for a repair that finds it no longer on CPU. */
	c = claim(r, TC_CLAIM_WAIT);
	if (!c) {
		bpf_map_push_elem(&free_slots, &idx, 0);
		return NULL;
	}
	/*
	 * Two events can see a task for the first time at once (its wakeup on one CPU, its
	 * switch-in on another): the first to give it a slot wins, and the other gives its
	 * record back untouched and takes the winner's, which it then waits to claim. Else
	 * the task would hold two records, one never written again.
	 */
	if (__sync_val_compare_and_swap(&ts->slot, 0, idx + 1) != 0) {
		write_end(r, c);
		bpf_map_push_elem(&free_slots, &idx, 0);
		idx = ts->slot - 1;
		return bpf_map_lookup_elem(&records, &idx);
	}
	ts->untracked = 0;

	r->tid = task->pid;
	r->tgid = task->tgid;
	r->start_ns = task->start_time;
	r->exec_gen = 0;
	r->exec_ns = task->se.sum_exec_runtime;
	r->cgroup_id = cgroup_of(task);
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), task->comm);
	v = &r->live;
	v->state = assumed;
	v->prev_state = assumed;
	v->cpu = bpf_get_smp_processor_id();
	v->since_ns = now;
	for (i = 0; i < TC_TIMED_STATES; i++)
		v->state_ns[i] = 0;
	v->cpu_ns = 0;
	v->cpu_at_ns = now;
	v->nvcsw = 0;
	v->nivcsw = 0;
	v->sc_nr = TC_NO_SYSCALL;
	v->last_sc_nr = TC_NO_SYSCALL;
	v->last_sc_ret = 0;
	v->sc_enter_ns = 0;
	v->sc_on_cpu_ns = 0;
	v->kstack = 0;
	v->ustack = 0;
	/* No view at a tick: a thread first seen after the tick shows its first state. */
	r->tick_ns = 0;
	write_end(r, c);
	return r;
}

/*
 * The task's record, created on first sight; *slot is set to its slot + 1 (0: none). A
 * task refused a record because the array was full asks again only when retry is set (at
 * switch-in), so a full map costs the syscall path one counter increment, not a failed
 * allocation per event.
 */
static __always_inline struct record *record_get(struct task_struct *task, __u8 assumed,
						 bool retry, __u32 *slot)
{
	struct task_slot *ts;
	struct record *r;
	__u32 idx;

	*slot = 0;
	ts = bpf_task_storage_get(&task_slots, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		count(TC_LOST_UPDATES);
		return NULL;
	}
	if (ts->slot) {
		idx = ts->slot - 1;
		r = bpf_map_lookup_elem(&records, &idx);
	} else if (ts->untracked && !retry) {
		count(TC_LOST_UPDATES);
		return NULL;
	} else {
		r = record_claim(task, ts, assumed);
	}
	if (r)
		*slot = ts->slot;
	return r;
}

/*
 * The thread this CPU last switched in, whose record is at slot - 1, is not the one
 * running on it now: it left unseen, at left, when what runs now came in. With its task
 * at hand (looked up by tid) the kernel says how long it ran and how it waits now; a
 * thread not found (gone, or hidden from BPF as the test machines' agent is) is taken to
 * have slept from left.
 *
 * This writes another thread's record, which may be coming in on another CPU right now:
 * it claims the record with TC_CLAIM_TRY and checks again, under the claim, that the
 * record still shows the thread on this CPU; if the thread's own CPU holds it, that
 * CPU's write supersedes the repair (a switch-in or wakeup repairs an unseen switch-out
 * itself).
 */
static __noinline void left_unseen(__u32 slot, __u64 left, bool lookup)
{
	__u32 idx = slot - 1, cpu = bpf_get_smp_processor_id(), c;
	struct task_struct *task = NULL;
	struct record *r;
	__u64 now;

	r = bpf_map_lookup_elem(&records, &idx);
	if (!r || r->live.state != TC_ON_CPU || r->live.cpu != cpu)
		return;
	if (lookup && bpf_task_from_pid && bpf_task_release)
		task = bpf_task_from_pid(r->tid);
	if (task && (task->start_time != r->start_ns || task->on_cpu)) {
		bpf_task_release(task);
		return;
	}
	c = claim(r, TC_CLAIM_TRY);
	if (!c) {
		if (task)
			bpf_task_release(task);
		return;
	}
	now = bpf_ktime_get_ns();
	if (r->live.state != TC_ON_CPU || r->live.cpu != cpu) {
		/* Switched in elsewhere between the look and the claim. */
	} else if (task) {
		unseen_switch_out(r, task, state_of(false, task->__state), now);
		keep_tick(r, now);
	} else {
		if (left > now)
			left = now;
		if (left < counted_to(r))
			left = counted_to(r);
		keep_tick(r, left);
		/* The kernel's count is out of reach: the time from the switch-in stands in. */
		r->live.cpu_ns += left - counted_to(r);
		r->live.cpu_at_ns = left;
		enter_state(r, TC_SLEEPING, left);
		r->live.nvcsw++;
		keep_tick(r, now);
		count(TC_UNSEEN_SWITCHES);
	}
	write_end(r, c);
	if (task)
		bpf_task_release(task);
}

/*
 * The record of the task running on this CPU, through cpu_slot when it is known; and,
 * as its name says, more than a lookup: it points cpu_slot at that record, and when
 * cpu_slot named another thread's, repairs that thread's record (it left this CPU unseen,
 * see left_unseen), or gives the task its first record.
 */
static __always_inline struct record *sync_current_record(struct task_struct *task)
{
	__u32 zero = 0, idx, missed;
	__u32 *cs = bpf_map_lookup_elem(&cpu_slot, &zero);
	struct record *r;

	if (!cs)
		return NULL;
	missed = *cs;
	if (missed) {
		idx = missed - 1;
		r = bpf_map_lookup_elem(&records, &idx);
		if (r && r->tid == task->pid && r->start_ns == task->start_time)
			return r;
	}
	/* Not known (running since before threadcap attached, refused a record) or not this
	 * task's: ask task storage. */
	r = record_get(task, TC_ON_CPU, false, &idx);
	*cs = idx;
	if (missed && missed != idx) {
		__u64 now = bpf_ktime_get_ns();

		left_unseen(missed, r ? came_in(r, task, now) : now, true);
	}
	return r;
}

/* Cumulative on-CPU time at now, counting the stretch in progress. */
static __always_inline __u64 on_cpu_ns_at(struct record *r, __u64 now)
{
	__u64 ns = r->live.state_ns[TC_ON_CPU];

	if (r->live.state == TC_ON_CPU && now > r->live.since_ns)
		ns += now - r->live.since_ns;
	return ns;
}

static __always_inline void copy_args(struct record *r, struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	r->live.sc_args[0] = regs->di;
	r->live.sc_args[1] = regs->si;
	r->live.sc_args[2] = regs->dx;
	r->live.sc_args[3] = regs->r10;
	r->live.sc_args[4] = regs->r8;
	r->live.sc_args[5] = regs->r9;
#else
	r->live.sc_args[0] = regs->orig_x0;
	r->live.sc_args[1] = regs->regs[1];
	r->live.sc_args[2] = regs->regs[2];
	r->live.sc_args[3] = regs->regs[3];
	r->live.sc_args[4] = regs->regs[4];
	r->live.sc_args[5] = regs->regs[5];
#endif
}

/*
 * Passive mode: the syscall a task is in, read from the user registers saved at kernel
 * entry. x86 marks a syscall by orig_ax >= 0 with ax still -ENOSYS (the return value is
 * stored only on exit), which a fault or interrupt taken in user space does not have;
 * arm64 sets syscallno to -1 for every entry but svc.
 */
static __always_inline void read_syscall(struct record *r, struct task_struct *task, __u64 now)
{
	struct pt_regs *regs;
	long nr;

	r->live.sc_nr = TC_NO_SYSCALL;
	if (task->flags & PF_KTHREAD)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return;
#if defined(__TARGET_ARCH_x86)
	nr = regs->orig_ax;
	if (nr < 0 || regs->ax != (unsigned long)-ENOSYS)
		return;
#else
	nr = regs->syscallno;
	if (nr < 0)
		return;
#endif
	r->live.sc_nr = nr;
	r->live.sc_enter_ns = now;
	r->live.sc_on_cpu_ns = r->live.state_ns[TC_ON_CPU];
	copy_args(r, regs);
}


/* Defined with the rest of spans, at the end. */
static __always_inline void spans_exit(struct task_struct *task);

/*
 * The task's last switch-out: close its accounting and drop its task storage. A task never
 * seen before gets a record here too, so that user space learns that a thread it only knew
 * from /proc is gone.
 */
static __always_inline void switch_out_dead(struct task_struct *prev, __u64 now)
{
	struct record *r = sync_current_record(prev);
	__u32 c;

	if (r && (c = write_begin(r, now, TC_CLAIM_WAIT))) {
		if (r->live.state == TC_ON_CPU)
			r->live.cpu_ns += prev->se.sum_exec_runtime - r->exec_ns;
		enter_state(r, TC_DEAD, now);
		r->live.sc_nr = TC_NO_SYSCALL;
		write_end(r, c);
	}
	bpf_task_storage_delete(&task_slots, prev);
	spans_exit(prev);
}

/* A stack id + 1 for the record, 0 when the stack could not be stored. */
static __always_inline __u16 stack_of(void *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	if (id < 0 || id >= 0xffff) {
		count(TC_LOST_STACKS);
		return 0;
	}
	return id + 1;
}

/*
 * With deferred_stacks, a switch-out to a state of stack_states walks nothing: an episode
 * that begins and ends between two ticks, which no row shows, costs no walk. The ones a
 * tick sees are walked either here, as they end, or by the sampler's read if still open
 * then (kstackask.bpf.c). Here: the first write to the record since the tick (a wakeup,
 * or the switch-in when the wakeup was not seen) of a thread that has been in such a
 * state since before the tick, about to copy the view at the tick; the thread has not
 * run since, so its kernel stack is still the one it waits in. Read unclaimed: a record
 * being written meanwhile at worst costs a walk no row uses, or a stack a row lacks.
 */
static __always_inline void walk_at_end(struct task_struct *task, struct record *r, __u64 now)
{
	__u64 tick = tick_ns;
	struct tc_tick_kstack *k;
	__u32 zero = 0, tid;
	long n;

	if (!deferred_stacks || !tick || now < tick || r->tick_ns == tick ||
	    r->live.since_ns > tick || !(stack_states & (1 << r->live.state)))
		return;
	k = bpf_map_lookup_elem(&kstack_scratch, &zero);
	if (!k)
		return;
	n = bpf_get_task_stack(task, k->ips, sizeof(k->ips), 0);
	count(TC_STACK_WALKS);
	if (n <= 0)
		return;
	k->tick_ns = tick;
	k->nr = n / sizeof(k->ips[0]);
	tid = task->pid;
	if (bpf_map_update_elem(&tick_kstacks, &tid, k, BPF_ANY))
		count(TC_LOST_STACKS);
}

/*
 * Stacks at the tick (tick_stacks): the code a thread on CPU at the tick was running then,
 * taken by the first timer on its CPU at or after the instant (the scheduler's tick, 1/HZ,
 * on a busy CPU), for a thread on CPU at the tick and ever since: what it runs now is what
 * it ran at the instant, give or take that timer's period. One walk per thread on CPU and
 * tick, whatever the rate of switches. A thread that left the CPU before its timer came
 * keeps no stack for that tick, unless it is walked as the thread leaves (switch_out):
 * then the code it had run on to since the instant.
 */
static __always_inline bool wants_tick_stacks(struct record *r, __u64 now)
{
	__u64 tick = tick_ns;

	if (!tick || now < tick || r->live.state != TC_ON_CPU || r->live.since_ns > tick)
		return false;
	if (r->tick_ns != tick)
		return true; /* no write since the tick: the view at the tick is the live one */
	return r->at_tick.state == TC_ON_CPU && !r->stacks_at_tick;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       unsigned int prev_state, __u64 now)
{
	__u16 kstack = 0, ustack = 0;
	bool captured, at_tick;
	struct record *r;
	__u64 exec;
	__u32 c;
	__u8 st;

	if (prev_state & TASK_DEAD) {
		switch_out_dead(prev, now);
		return;
	}
	r = sync_current_record(prev);
	if (!r)
		return;
	st = state_of(preempt, prev_state);
	/*
	 * prev is still current here, so both stacks are its own: the kernel one from this
	 * hook down through __schedule to what the thread waits in, the user one from the
	 * registers saved at kernel entry. Taken before seq goes odd, as a walk is slow next
	 * to the stores, and a reader would otherwise retry for its whole length.
	 */
	captured = !deferred_stacks && (stack_states & (1 << st));
	/* On CPU at the tick and leaving before a timer took its stacks: they are taken here. */
	at_tick = tick_stacks && wants_tick_stacks(r, now);
	if (captured || at_tick) {
		kstack = stack_of(ctx, 0);
		if (user_stacks && !(prev->flags & PF_KTHREAD))
			ustack = stack_of(ctx, BPF_F_USER_STACK);
	}
	c = claim(r, TC_CLAIM_WAIT);
	if (!c)
		return;
	if (r->live.state != TC_ON_CPU)
		unseen_switch_in(r, prev, now);
	keep_tick(r, now);
	exec = prev->se.sum_exec_runtime;
	r->live.cpu_ns += exec - r->exec_ns;
	r->live.cpu_at_ns = now;
	r->exec_ns = exec;
	if (at_tick && r->tick_ns == tick_ns && r->at_tick.state == TC_ON_CPU) {
		r->at_tick.kstack = kstack;
		r->at_tick.ustack = ustack;
		r->stacks_at_tick = 1;
	}
	r->live.kstack = captured ? kstack : 0;
	r->live.ustack = captured ? ustack : 0;
	enter_state(r, st, now);
	if (st == TC_RUNNABLE)
		r->live.nivcsw++;
	else
		r->live.nvcsw++;
	if (passive_syscalls)
		read_syscall(r, prev, now);
	r->cgroup_id = cgroup_of(prev);
	write_end(r, c);
}

static __always_inline void switch_in(struct task_struct *next, __u64 now, __u32 cpu)
{
	__u32 zero = 0, slot = 0, c;
	__u32 *cs = bpf_map_lookup_elem(&cpu_slot, &zero);
	struct record *r = NULL;

	if (next->pid)
		r = record_get(next, TC_RUNNABLE, true, &slot);
	if (cs)
		*cs = slot;
	if (!r)
		return;
	walk_at_end(next, r, now);
	c = claim(r, TC_CLAIM_WAIT);
	if (!c)
		return;
	/* Still on CPU in its record: it left unseen, and was runnable since (no wakeup). */
	if (r->live.state == TC_ON_CPU)
		unseen_switch_out(r, next, TC_RUNNABLE, now);
	keep_tick(r, now);

	enter_state(r, TC_ON_CPU, now);
	r->exec_ns = next->se.sum_exec_runtime;
	r->live.cpu_at_ns = now;
	r->live.cpu = cpu;
	/* Passive mode cannot see the syscall end: once running, the task's syscall is unknown. */
	if (passive_syscalls)
		r->live.sc_nr = TC_NO_SYSCALL;
	write_end(r, c);
}

/*
 * sched_switch has both sides of a context switch, so it is both the switch-out of prev
 * and what a finish_task_switch probe would see for next; a tp_btf program gets the
 * task pointers and the raw prev_state directly, with no tracefs and no kprobes.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();

	/* pid 0 is each CPU's idle task, not a thread anyone asks about. */
	if (prev->pid) {
		switch_out(ctx, prev, preempt, prev_state, now);
	} else {
		__u32 zero = 0;
		__u32 *cs = bpf_map_lookup_elem(&cpu_slot, &zero);

		/* The idle task ran, yet a thread was on this CPU: it left unseen (cpu_idle
		 * would have noticed, unless this CPU never went idle). */
		if (cs && *cs)
			left_unseen(*cs, now, true);
	}
	/* Called for the idle task too, which has no record: this CPU's slot is cleared. */
	switch_in(next, now, bpf_get_smp_processor_id());
	return 0;
}

/*
 * sched_wakeup fires once the task is on a runqueue, under that runqueue's lock: the
 * moment its wait for a CPU begins. A task that had not yet left its CPU (woken before it
 * got to switch out) is still on CPU in its record and keeps that state.
 */
static __always_inline void woken(struct task_struct *p)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 slot, c;
	struct record *r = record_get(p, TC_SLEEPING, false, &slot);

	if (!r || r->live.state == TC_RUNNABLE)
		return;
	/* Woken before it got to switch out: still on CPU, and stays so. */
	if (r->live.state == TC_ON_CPU && p->on_cpu)
		return;
	walk_at_end(p, r, now);
	/* A wakeup can come in hard interrupt context, inside a write on this CPU: claim
	 * backs off then, and waits only for another CPU's. */
	c = claim(r, TC_CLAIM_WAIT);
	if (!c)
		return;
	/* On CPU in its record, yet not running: it left unseen, to wait for this wakeup. */
	if (r->live.state == TC_ON_CPU)
		unseen_switch_out(r, p, TC_SLEEPING, now);
	keep_tick(r, now);

	enter_state(r, TC_RUNNABLE, now);
	write_end(r, c);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(on_wakeup, struct task_struct *p)
{
	woken(p);
	return 0;
}

/* A new thread or process becomes runnable for the first time. */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(on_wakeup_new, struct task_struct *p)
{
	woken(p);
	return 0;
}

/*
 * A CPU going idle: whatever ran on it has left. After a switch-out that reached no event
 * (see unseen_switch_out) this is where it shows, within microseconds: the thread blocked
 * (a runnable one would run instead), so it sleeps from now. No task lookup here: the idle
 * loop is no place to take references.
 */
SEC("tp_btf/cpu_idle")
int BPF_PROG(on_idle, unsigned int state, unsigned int cpu)
{
	__u32 zero = 0;
	__u32 *cs;

	/* Leaving idle (PWR_EVENT_EXIT), or idle injected by a kernel thread, which runs. */
	if (state == (unsigned int)-1 || bpf_get_current_task_btf()->pid)
		return 0;
	cs = bpf_map_lookup_elem(&cpu_slot, &zero);
	if (cs && *cs) {
		left_unseen(*cs, bpf_ktime_get_ns(), false);
		*cs = 0;
	}
	return 0;
}

/*
 * The running task's se.sum_exec_runtime when this CPU's timer began to run (timers run one
 * after another, interrupts off): see on_timer.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} timer_exec SEC(".maps");

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(on_timer_entry, void *timer)
{
	__u32 zero = 0;
	__u64 *exec = bpf_map_lookup_elem(&timer_exec, &zero);

	if (exec)
		*exec = bpf_get_current_task_btf()->se.sum_exec_runtime;
	return 0;
}

/*
 * A timer has run on this CPU. After one that brought the running task's
 * se.sum_exec_runtime up to date (the scheduler's tick, every 1/HZ on a busy CPU, does;
 * so does one that woke a task here), what runs now is known for certain, which events
 * alone cannot promise (see unseen_switch_out), and so is the CPU time it has used. A
 * thread that came in unseen is set on CPU from when the kernel says it did, within a tick
 * instead of at its next switch seen, and the kernel's count of a running thread's CPU time
 * is brought up to date, so that time the hypervisor took (steal, which the kernel does not
 * count) or a switch missed is not credited as on CPU for longer than a tick. Only on a
 * change: a record is written once per tick, not per timer.
 *
 * Any other timer finds the count as of the kernel's last update, up to a tick ago: taken
 * as of now, it would credit that time to the next tick's row instead of this one (a CPU
 * then showed more than its interval's time). It only takes the stacks at the tick.
 */
SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(on_timer, void *timer)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 cpu = bpf_get_smp_processor_id(), c, zero = 0;
	__u16 kstack = 0, ustack = 0;
	__u64 now = 0, exec, *before;
	struct record *r;
	bool changed, stacks;

	if (!task->pid)
		return 0;
	r = sync_current_record(task);
	if (!r)
		return 0;
	exec = task->se.sum_exec_runtime;
	before = bpf_map_lookup_elem(&timer_exec, &zero);
	changed = before && exec != *before &&
		  (r->live.state != TC_ON_CPU || r->live.cpu != cpu || exec != r->exec_ns);
	stacks = false;
	if (tick_stacks) {
		now = bpf_ktime_get_ns();
		stacks = wants_tick_stacks(r, now);
	}
	if (!changed && !stacks)
		return 0;
	/* Walked before the claim, as at a switch-out: a walk is slow next to the stores. */
	if (stacks) {
		if (tick_stacks & TC_TICK_KERNEL_STACK)
			kstack = stack_of(ctx, 0);
		if ((tick_stacks & TC_TICK_USER_STACK) && !(task->flags & PF_KTHREAD))
			ustack = stack_of(ctx, BPF_F_USER_STACK);
	}
	/* In hard interrupt context, perhaps inside a write of this very record: a refresh,
	 * so it backs off from any writer. The next timer does it. */
	c = claim(r, TC_CLAIM_TRY);
	if (!c)
		return 0;
	if (!now)
		now = bpf_ktime_get_ns();
	if (changed) {
		if (r->live.state != TC_ON_CPU)
			unseen_switch_in(r, task, now);
		keep_tick(r, now);
		r->live.cpu = cpu;
		r->live.cpu_ns += exec - r->exec_ns;
		r->live.cpu_at_ns = now;
		r->exec_ns = exec;
	} else {
		keep_tick(r, now);
	}
	if (stacks && r->tick_ns == tick_ns && r->at_tick.state == TC_ON_CPU) {
		r->at_tick.kstack = kstack;
		r->at_tick.ustack = ustack;
		r->stacks_at_tick = 1;
	}
	write_end(r, c);
	return 0;
}

/* The raw_syscalls pair: exact syscall, arguments and entry time (full mode only). */
SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	__u64 now = bpf_ktime_get_ns();
	struct record *r = sync_current_record(bpf_get_current_task_btf());
	__u32 c;

	if (!r)
		return 0;
	/*
	 * A record not on CPU here missed its switch-in (see unseen_switch_out); it is put
	 * right at its switch-out, where the kernel's CPU time of the thread is up to date,
	 * not here, where it can be a timer tick stale.
	 */
	c = write_begin(r, now, TC_CLAIM_WAIT);
	if (!c)
		return 0;
	r->live.sc_nr = id;
	r->live.sc_enter_ns = now;
	r->live.sc_on_cpu_ns = on_cpu_ns_at(r, now);
	copy_args(r, regs);
	write_end(r, c);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	struct record *r = sync_current_record(bpf_get_current_task_btf());
	__u32 c;

	if (!r)
		return 0;
	/*
	 * The one hook without a clock, which would cost every syscall another 55 ns here
	 * (BENCHMARKS.md), and tracing programs may not read the coarse one. So it keeps no
	 * view of the tick: a thread on CPU inside a syscall at the tick that returns before
	 * its next clocked event shows at that tick as out of the syscall. Its state and
	 * times are unaffected: this hook changes neither.
	 */
	c = claim(r, TC_CLAIM_WAIT);
	if (!c)
		return 0;
	r->live.last_sc_nr = r->live.sc_nr;
	r->live.last_sc_ret = ret;
	r->live.sc_nr = TC_NO_SYSCALL;
	write_end(r, c);
	return 0;
}

/*
 * exec may change the thread's tid (a non-leader that execs takes the leader's) and its
 * name; exec_gen tells user space to reread the process's executable and user.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct record *r = sync_current_record(p);
	__u32 c;

	if (!r)
		return 0;
	c = write_begin(r, bpf_ktime_get_ns(), TC_CLAIM_WAIT);
	if (!c)
		return 0;
	r->tid = p->pid;
	r->tgid = p->tgid;
	r->exec_gen++;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);
	write_end(r, c);
	return 0;
}

/*
 * A thread renamed (prctl, pthread_setname_np, /proc/.../comm). The renamer may be another
 * thread, on another CPU: a claim like any other writer's.
 */
SEC("tp_btf/task_rename")
int BPF_PROG(on_rename, struct task_struct *task, const char *comm)
{
	struct task_slot *ts = bpf_task_storage_get(&task_slots, task, 0, 0);
	struct record *r;
	__u32 idx, c;

	if (!ts || !ts->slot)
		return 0;
	idx = ts->slot - 1;
	r = bpf_map_lookup_elem(&records, &idx);
	if (!r)
		return 0;
	c = claim(r, TC_CLAIM_WAIT);
	if (!c)
		return 0;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm);
	write_end(r, c);
	return 0;
}


/*
 * Spans. A USDT probe or uprobe starts or ends a span on the thread that hits it. At a
 * start the thread's cumulative time per state (from its record's live view, counting the
 * stretch in progress) is kept in a frame of its span stack; at the end the differences
 * are the span's exact split of its wall time, added with the wall time to the span's
 * sums and log2 histograms. Nothing is streamed: user space reads the sums once a minute
 * and the open spans at each tick.
 *
 * Nesting: each thread has a stack of TC_SPAN_DEPTH open spans. An end closes the
 * innermost open span of its name and drops (counts as missed ends) any opened inside it
 * and not ended. A span does not nest in itself: a start of a span already open drops
 * that one and what is inside it, as its end was missed (PostgreSQL's query__done never
 * comes for a query that fails). A start with the stack full is not kept; the next end
 * is taken as its own. A thread's stack lives in a hash map from its first span to its
 * exit (spans_exit), so a span that never ends holds nothing past its thread.
 */

volatile const __u8 spans_on = 0; /* set by the loader when spans are configured */

/*
 * The hook-free mode (syscalls tick): no hook keeps the records, so a span's parts come
 * from the kernel's own counts of the thread, read at its start and its end, where the
 * thread is running: its CPU time (se.sum_exec_runtime), its waits for a CPU
 * (sched_info.run_delay: none is in progress while it runs) and, with schedstats, its
 * sleeps (stats.sum_sleep_runtime, of which sum_block_runtime in D). What they leave of
 * the wall time is CPU time the kernel had not yet added to the running thread's count
 * at either end (it adds it at its tick and at a switch), and, without schedstats, the
 * time off CPU: sleeping if the thread slept (a voluntary switch) in between.
 */
volatile const __u8 hook_free = 0;
volatile const __u8 schedstats = 0; /* kernel.sched_schedstats was 1 at load */

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)
struct sched_entity___span {
	__u64 sum_exec_runtime;
};
struct sched_info___span {
	unsigned long long run_delay;
};
struct sched_statistics___span {
	__u64 sum_sleep_runtime;
	__u64 sum_block_runtime;
};
struct task_struct___span {
	struct sched_entity___span se;
	struct sched_info___span sched_info;
	unsigned long nvcsw;
	struct sched_statistics___span stats;
};
#pragma clang attribute pop

/* The running thread's cumulative times per span part, as the kernel counts them. */
static __always_inline void counted_parts(struct task_struct *task, __u64 *parts)
{
	struct task_struct___span *t = (void *)task;

	parts[TC_ON_CPU] = t->se.sum_exec_runtime;
	parts[TC_RUNNABLE] = t->sched_info.run_delay;
	parts[TC_SLEEPING] = 0;
	parts[TC_UNINTERRUPTIBLE] = 0;
	if (schedstats && bpf_core_field_exists(t->stats)) {
		parts[TC_UNINTERRUPTIBLE] = t->stats.sum_block_runtime;
		parts[TC_SLEEPING] = t->stats.sum_sleep_runtime - parts[TC_UNINTERRUPTIBLE];
	}
}

static __always_inline __u32 voluntary_switches(struct task_struct *task)
{
	return ((struct task_struct___span *)task)->nvcsw;
}

/* The saved user registers' size (the uapi layout), bounding an argument's register. */
#if defined(__TARGET_ARCH_x86)
#define TC_PT_REGS_SIZE (21 * 8)
#else
#define TC_PT_REGS_SIZE (34 * 8)
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct tc_probe);
	__uint(max_entries, TC_MAX_PROBES);
} span_probes SEC(".maps");

/* Open spans by tid. Sized at load time; only threads that open spans have an entry. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct tc_span_thread);
	__uint(max_entries, 1);
} span_threads SEC(".maps");

/* A zeroed tc_span_thread, too big for the stack, to create entries from. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct tc_span_thread);
	__uint(max_entries, 1);
} span_blank SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct tc_span_stats);
	__uint(max_entries, TC_MAX_SPANS);
} span_stats SEC(".maps");

static __always_inline void spans_exit(struct task_struct *task)
{
	__u32 tid = task->pid;

	if (spans_on)
		bpf_map_delete_elem(&span_threads, &tid);
}

/*
 * The hook-free mode's thread exit, with spans only (the loader drops it otherwise, and in
 * the other modes, where the thread's last switch forgets its spans). Without it every
 * thread that ever opened a span would keep its entry: where threads come and go (a
 * database's backend per connection) the map is full after DefaultSpanThreads of them,
 * and then no thread opens a span again. It runs once per thread, at its exit: on no path
 * a running thread takes again and again.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit_spans, struct task_struct *p)
{
	spans_exit(p);
	return 0;
}

/*
 * Only the thread itself writes its open spans, in its probe program, which nothing on
 * its CPU interrupts with another write of them: seq is a plain count, odd while a write
 * is in progress, for user space to tell a copy taken mid-write (see bpf/spans.go). The
 * store is ordered after the write's as in seq_release.
 */
#if defined(__TARGET_ARCH_arm64)
#define span_seq_bump(t) ((void)__sync_lock_test_and_set(&(t)->seq, (t)->seq + 1))
#else
#define span_seq_bump(t)                                                                    \
	do {                                                                               \
		asm volatile("" ::: "memory");                                             \
		(t)->seq++;                                                                \
		asm volatile("" ::: "memory");                                             \
	} while (0)
#endif

/* The value of a probe argument, read as libbpf's usdt.bpf.h does: registers from the
 * saved user registers, memory from user space, narrowed and sign-extended to size. */
static __always_inline __s64 span_arg(struct pt_regs *ctx, struct tc_arg *a)
{
	__u64 v = 0, base = 0;
	__u32 size = a->size, shift;

	switch (a->kind) {
	case TC_ARG_CONST:
		return a->value;
	case TC_ARG_REG:
		if (a->reg_off > TC_PT_REGS_SIZE - 8)
			return 0;
		if (bpf_probe_read_kernel(&v, sizeof(v), (void *)ctx + a->reg_off))
			return 0;
		break;
	case TC_ARG_MEM:
		if (a->reg_off > TC_PT_REGS_SIZE - 8)
			return 0;
		if (bpf_probe_read_kernel(&base, sizeof(base), (void *)ctx + a->reg_off))
			return 0;
		if (size > 8)
			size = 8;
		if (bpf_probe_read_user(&v, size, (void *)(base + a->value)))
			return 0;
		break;
	default:
		return 0;
	}
	if (size >= 8 || size == 0)
		return v;
	shift = 64 - size * 8;
	if (a->is_signed)
		return ((__s64)(v << shift)) >> shift;
	return (v << shift) >> shift;
}

/*
 * The thread's cumulative time per span part at now: stopped counts as sleeping. On CPU is
 * the kernel's count of its CPU time, as rows show it; time the scheduler had it on a CPU
 * that the kernel did not count (the hypervisor took the CPU, or a switch reached no
 * event) it spent waiting for a CPU, so it is runnable.
 */
static __always_inline void span_parts_at(struct tc_view *v, __u64 now, __u64 *parts)
{
	__u64 in_state = now > v->since_ns ? now - v->since_ns : 0;
	__u64 from = v->cpu_at_ns > v->since_ns ? v->cpu_at_ns : v->since_ns;
	__u64 on_cpu = v->state_ns[TC_ON_CPU], cpu = v->cpu_ns;

	parts[TC_RUNNABLE] = v->state_ns[TC_RUNNABLE];
	parts[TC_SLEEPING] = v->state_ns[TC_SLEEPING] + v->state_ns[TC_STOPPED];
	parts[TC_UNINTERRUPTIBLE] = v->state_ns[TC_UNINTERRUPTIBLE];
	switch (v->state) {
	case TC_ON_CPU:
		on_cpu += in_state;
		if (now > from)
			cpu += now - from;
		break;
	/* Each part by its constant index: indexed by the state, the stack read is at a
	 * variable offset, which the verifiers of Linux 6.1 and 6.12 reject. */
	case TC_RUNNABLE:
		parts[TC_RUNNABLE] += in_state;
		break;
	case TC_UNINTERRUPTIBLE:
		parts[TC_UNINTERRUPTIBLE] += in_state;
		break;
	case TC_SLEEPING:
	case TC_STOPPED:
		parts[TC_SLEEPING] += in_state;
		break;
	default:
		break;
	}
	parts[TC_ON_CPU] = cpu;
	if (on_cpu > cpu)
		parts[TC_RUNNABLE] += on_cpu - cpu;
}

/*
 * A copy of r's live view taken whole: the probe runs in the record's own thread, but a
 * timer may interrupt it and refresh the record, or a repair from another CPU write it
 * (see seqclaim.h). A few tries, as a write is short; the last copy serves if they fail.
 */
static __always_inline void live_view(struct record *r, struct tc_view *v)
{
	__u32 s;

	for (int i = 0; i < 4; i++) {
		s = *(volatile __u32 *)&r->seq;
		__builtin_memcpy(v, &r->live, sizeof(*v));
		asm volatile("" ::: "memory");
		if (!(s & 1) && *(volatile __u32 *)&r->seq == s)
			return;
	}
}

/* Adds the ended span of frame f to its sums. The parts add up to the wall time: any
 * difference (a repair of an unseen switch moved time across the start) is taken from or
 * given to the largest part; in the hook-free mode, given to rest_to (what the counts
 * missed: see hook_free), or taken from on CPU while it has enough. */
static __always_inline void span_account(struct tc_span_frame *f, __u64 *now_parts, __u64 now,
					 int rest_to)
{
	__u32 span = f->span;
	struct tc_span_stats *st = bpf_map_lookup_elem(&span_stats, &span);
	__s64 part[TC_SPAN_PARTS], sum = 0, wall;
	int i, largest = 0;

	if (!st || now < f->start_ns)
		return;
	wall = now - f->start_ns;
	for (i = 0; i < TC_SPAN_PARTS; i++) {
		part[i] = now_parts[i] - f->part_ns[i];
		if (part[i] < 0)
			part[i] = 0;
		sum += part[i];
		if (part[i] > part[largest])
			largest = i;
	}
	if (hook_free && wall >= sum)
		largest = rest_to;
	else if (hook_free && part[TC_ON_CPU] >= sum - wall)
		largest = TC_ON_CPU;
	largest &= TC_SPAN_PARTS - 1;
	part[largest] += wall - sum;
	if (part[largest] < 0)
		part[largest] = 0;
	st->count++;
	st->wall_ns += wall;
	for (i = 0; i < TC_SPAN_PARTS; i++)
		st->part_ns[i] += part[i];
	st->wall_hist[tc_hist_bucket(wall)]++;
	st->cpu_hist[tc_hist_bucket(part[TC_ON_CPU])]++;
}

/* The innermost open frame of span, or -1. */
static __always_inline int span_find(struct tc_span_thread *t, __u16 span)
{
	int i;

	for (i = TC_SPAN_DEPTH - 1; i >= 0; i--)
		if (i < t->depth && t->frames[i].span == span)
			return i;
	return -1;
}

/* Drops the frames from level on, whose ends never came. */
static __always_inline void span_drop_from(struct tc_span_thread *t, int level)
{
	if (level < t->depth) {
		for (int i = level; i < TC_SPAN_DEPTH; i++)
			if (i < t->depth)
				count(TC_SPAN_MISSED_ENDS);
		t->depth = level;
	}
}

static __always_inline void span_start(struct pt_regs *ctx, struct tc_probe *p,
				       struct tc_span_thread *t, __u64 *parts, __u64 now)
{
	struct tc_span_frame *f;
	__u64 text;
	int level = span_find(t, p->span);
	__u32 d;

	if (level >= 0)
		span_drop_from(t, level);
	d = t->depth;
	if (d >= TC_SPAN_DEPTH) {
		t->skipped++;
		count(TC_SPAN_NO_ROOM);
		return;
	}
	f = &t->frames[d & (TC_SPAN_DEPTH - 1)];
	f->span = p->span;
	f->start_ns = now;
	for (int i = 0; i < TC_SPAN_PARTS; i++)
		f->part_ns[i] = parts[i];
	f->int_arg = span_arg(ctx, &p->int_arg);
	f->nvcsw = hook_free ? voluntary_switches(bpf_get_current_task_btf()) : 0;
	f->text[0] = 0;
	if (p->text_arg.kind != TC_ARG_NONE) {
		text = span_arg(ctx, &p->text_arg);
		if (text && bpf_probe_read_user_str(f->text, sizeof(f->text), (void *)text) < 0)
			f->text[0] = 0;
	}
	t->depth = d + 1;
}

static __always_inline void span_end(struct tc_probe *p, struct tc_span_thread *t,
				     __u64 *parts, __u64 now)
{
	struct tc_span_frame *f;
	int level, rest_to = TC_ON_CPU;

	if (t->skipped) {
		t->skipped--;
		return;
	}
	level = span_find(t, p->span);
	if (level < 0) {
		count(TC_SPAN_UNMATCHED);
		return;
	}
	f = &t->frames[level & (TC_SPAN_DEPTH - 1)];
	if (hook_free && !schedstats && voluntary_switches(bpf_get_current_task_btf()) != f->nvcsw)
		rest_to = TC_SLEEPING;
	span_account(f, parts, now, rest_to);
	span_drop_from(t, level + 1);
	t->depth = level;
}

/*
 * The record of the thread hitting a probe, read-only: through cpu_slot when it names
 * this thread, else its task storage. Not sync_current_record, whose repair of a missed
 * switch takes a task reference, which a uprobe program may not.
 */
static __always_inline struct record *span_record(struct task_struct *task)
{
	__u32 zero = 0, idx;
	__u32 *cs = bpf_map_lookup_elem(&cpu_slot, &zero);
	struct task_slot *ts;
	struct record *r;

	if (cs && *cs) {
		idx = *cs - 1;
		r = bpf_map_lookup_elem(&records, &idx);
		if (r && r->tid == task->pid && r->start_ns == task->start_time)
			return r;
	}
	ts = bpf_task_storage_get(&task_slots, task, 0, 0);
	if (!ts || !ts->slot)
		return NULL;
	idx = ts->slot - 1;
	return bpf_map_lookup_elem(&records, &idx);
}

/*
 * Every span probe site, USDT or uprobe, entry or return, runs this program; its attach
 * cookie says which site. It runs in the thread that hit the probe, on its CPU, so its
 * record cannot change under it and its open spans are its own.
 */
SEC("uprobe")
int on_span_probe(struct pt_regs *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 site = bpf_get_attach_cookie(ctx), tid = task->pid, zero = 0;
	struct tc_span_thread *t, *blank;
	__u64 parts[TC_SPAN_PARTS], now, tick;
	struct tc_probe *p;
	struct record *r;
	struct tc_view v;

	p = bpf_map_lookup_elem(&span_probes, &site);
	if (!p)
		return 0;
	if (hook_free) {
		now = bpf_ktime_get_ns();
		counted_parts(task, parts);
	} else {
		r = span_record(task);
		if (!r) {
			count(TC_SPAN_NO_RECORD);
			return 0;
		}
		live_view(r, &v);
		now = bpf_ktime_get_ns();
		span_parts_at(&v, now, parts);
	}
	t = bpf_map_lookup_elem(&span_threads, &tid);
	if (!t) {
		if (p->end) {
			count(TC_SPAN_UNMATCHED);
			return 0;
		}
		blank = bpf_map_lookup_elem(&span_blank, &zero);
		if (!blank || bpf_map_update_elem(&span_threads, &tid, blank, BPF_NOEXIST)) {
			count(TC_SPAN_NO_ROOM);
			return 0;
		}
		t = bpf_map_lookup_elem(&span_threads, &tid);
		if (!t)
			return 0;
	}
	span_seq_bump(t);
	/* A tid reused after an exit the delete missed: not this thread's spans. */
	if (t->tid != tid || t->task_start_ns != task->start_time) {
		t->tid = tid;
		t->task_start_ns = task->start_time;
		t->depth = 0;
		t->skipped = 0;
		t->tick_ns = 0;
	}
	/* The first probe hit at or after the tick keeps the innermost span open at it (the
	 * stack is as it stood at the instant until now), as keep_tick does for records. */
	tick = tick_ns;
	if (tick && now >= tick && t->tick_ns != tick) {
		t->at_tick_open = t->depth > 0;
		if (t->depth > 0)
			__builtin_memcpy(&t->at_tick, &t->frames[(t->depth - 1) & (TC_SPAN_DEPTH - 1)],
					 sizeof(t->at_tick));
		t->tick_ns = tick;
	}
	if (p->end)
		span_end(p, t, parts, now);
	else
		span_start(ctx, p, t, parts, now);
	span_seq_bump(t);
	return 0;
}
