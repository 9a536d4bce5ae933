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
#include "threadcap.h"

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

/* Slots handed out so far, never given back: the high-water mark of the array. */
__u64 slots_used = 0;

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
 * Writers of one record never overlap (see threadcap.h), so seq needs no atomic increment
 * on x86, whose stores become visible in program order; a compiler barrier is enough.
 * arm64 may reorder stores: there an exchange, which is fully ordered, fences them.
 */
#if defined(__TARGET_ARCH_arm64)
#define seq_bump(r) ((void)__sync_lock_test_and_set(&(r)->seq, (r)->seq + 1))
#else
#define seq_bump(r)                                                                         \
	do {                                                                               \
		(r)->seq++;                                                                \
		asm volatile("" ::: "memory");                                             \
	} while (0)
#endif

/* Moves a record to state st at now, adding the time spent in the state it leaves. */
static __always_inline void enter_state(struct record *r, __u8 st, __u64 now)
{
	__u8 old = r->state;

	if (old < TC_TIMED_STATES && now > r->since_ns)
		r->state_ns[old] += now - r->since_ns;
	r->prev_state = old;
	r->state = st;
	r->since_ns = now;
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
	struct record *r;
	__u32 idx;
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
	ts->slot = idx + 1;
	ts->untracked = 0;

	seq_bump(r);
	r->tid = task->pid;
	r->tgid = task->tgid;
	r->state = assumed;
	r->prev_state = assumed;
	r->cpu = bpf_get_smp_processor_id();
	r->since_ns = bpf_ktime_get_ns();
	for (i = 0; i < TC_TIMED_STATES; i++)
		r->state_ns[i] = 0;
	r->nvcsw = 0;
	r->nivcsw = 0;
	r->sc_nr = TC_NO_SYSCALL;
	r->last_sc_nr = TC_NO_SYSCALL;
	r->last_sc_ret = 0;
	r->sc_enter_ns = 0;
	r->sc_on_cpu_ns = 0;
	r->start_ns = task->start_time;
	r->exec_gen = 0;
	r->kstack = 0;
	r->ustack = 0;
	r->cgroup_id = cgroup_of(task);
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), task->comm);
	seq_bump(r);
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

/* The record of the task running on this CPU, through cpu_slot when it is known. */
static __always_inline struct record *current_record(struct task_struct *task)
{
	__u32 zero = 0, idx;
	__u32 *cs = bpf_map_lookup_elem(&cpu_slot, &zero);
	struct record *r;

	if (!cs)
		return NULL;
	if (*cs) {
		idx = *cs - 1;
		r = bpf_map_lookup_elem(&records, &idx);
		if (r && r->tid == task->pid && r->start_ns == task->start_time)
			return r;
	}
	/* Not known (running since before threadcap attached, refused a record) or not this
	 * task's: ask task storage. */
	r = record_get(task, TC_ON_CPU, false, &idx);
	*cs = idx;
	return r;
}

/* Cumulative on-CPU time at now, counting the stretch in progress. */
static __always_inline __u64 on_cpu_ns_at(struct record *r, __u64 now)
{
	__u64 ns = r->state_ns[TC_ON_CPU];

	if (r->state == TC_ON_CPU && now > r->since_ns)
		ns += now - r->since_ns;
	return ns;
}

static __always_inline void copy_args(struct record *r, struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	r->sc_args[0] = regs->di;
	r->sc_args[1] = regs->si;
	r->sc_args[2] = regs->dx;
	r->sc_args[3] = regs->r10;
	r->sc_args[4] = regs->r8;
	r->sc_args[5] = regs->r9;
#else
	r->sc_args[0] = regs->orig_x0;
	r->sc_args[1] = regs->regs[1];
	r->sc_args[2] = regs->regs[2];
	r->sc_args[3] = regs->regs[3];
	r->sc_args[4] = regs->regs[4];
	r->sc_args[5] = regs->regs[5];
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

	r->sc_nr = TC_NO_SYSCALL;
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
	r->sc_nr = nr;
	r->sc_enter_ns = now;
	r->sc_on_cpu_ns = r->state_ns[TC_ON_CPU];
	copy_args(r, regs);
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
 * The task's last switch-out: close its accounting and drop its task storage. A task never
 * seen before gets a record here too, so that user space learns that a thread it only knew
 * from /proc is gone.
 */
static __always_inline void switch_out_dead(struct task_struct *prev, __u64 now)
{
	struct record *r = current_record(prev);

	if (r) {
		seq_bump(r);
		enter_state(r, TC_DEAD, now);
		r->sc_nr = TC_NO_SYSCALL;
		seq_bump(r);
	}
	bpf_task_storage_delete(&task_slots, prev);
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

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       unsigned int prev_state, __u64 now)
{
	__u16 kstack = 0, ustack = 0;
	struct record *r;
	__u8 st;

	if (prev_state & TASK_DEAD) {
		switch_out_dead(prev, now);
		return;
	}
	r = current_record(prev);
	if (!r)
		return;
	st = state_of(preempt, prev_state);
	/*
	 * prev is still current here, so both stacks are its own: the kernel one from this
	 * hook down through __schedule to what the thread waits in, the user one from the
	 * registers saved at kernel entry. Taken before seq goes odd, as a walk is slow next
	 * to the stores, and a reader would otherwise retry for its whole length.
	 */
	if (stack_states & (1 << st)) {
		kstack = stack_of(ctx, 0);
		if (user_stacks && !(prev->flags & PF_KTHREAD))
			ustack = stack_of(ctx, BPF_F_USER_STACK);
	}
	seq_bump(r);
	r->kstack = kstack;
	r->ustack = ustack;
	enter_state(r, st, now);
	if (st == TC_RUNNABLE)
		r->nivcsw++;
	else
		r->nvcsw++;
	if (passive_syscalls)
		read_syscall(r, prev, now);
	r->cgroup_id = cgroup_of(prev);
	seq_bump(r);
}

static __always_inline void switch_in(struct task_struct *next, __u64 now, __u32 cpu)
{
	__u32 zero = 0, slot = 0;
	__u32 *cs = bpf_map_lookup_elem(&cpu_slot, &zero);
	struct record *r = NULL;

	if (next->pid)
		r = record_get(next, TC_RUNNABLE, true, &slot);
	if (cs)
		*cs = slot;
	if (!r)
		return;
	seq_bump(r);
	enter_state(r, TC_ON_CPU, now);
	r->cpu = cpu;
	/* Passive mode cannot see the syscall end: once running, the task's syscall is unknown. */
	if (passive_syscalls)
		r->sc_nr = TC_NO_SYSCALL;
	seq_bump(r);
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
	if (prev->pid)
		switch_out(ctx, prev, preempt, prev_state, now);
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
	__u32 slot;
	struct record *r = record_get(p, TC_SLEEPING, false, &slot);

	if (!r || r->state == TC_ON_CPU || r->state == TC_RUNNABLE)
		return;
	seq_bump(r);
	enter_state(r, TC_RUNNABLE, now);
	seq_bump(r);
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

/* The raw_syscalls pair: exact syscall, arguments and entry time (full mode only). */
SEC("tp_btf/sys_enter")
int BPF_PROG(on_sys_enter, struct pt_regs *regs, long id)
{
	__u64 now = bpf_ktime_get_ns();
	struct record *r = current_record(bpf_get_current_task_btf());

	if (!r)
		return 0;
	seq_bump(r);
	r->sc_nr = id;
	r->sc_enter_ns = now;
	r->sc_on_cpu_ns = on_cpu_ns_at(r, now);
	copy_args(r, regs);
	seq_bump(r);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(on_sys_exit, struct pt_regs *regs, long ret)
{
	struct record *r = current_record(bpf_get_current_task_btf());

	if (!r)
		return 0;
	seq_bump(r);
	r->last_sc_nr = r->sc_nr;
	r->last_sc_ret = ret;
	r->sc_nr = TC_NO_SYSCALL;
	seq_bump(r);
	return 0;
}

/*
 * exec may change the thread's tid (a non-leader that execs takes the leader's) and its
 * name; exec_gen tells user space to reread the process's executable and user.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct record *r = current_record(p);

	if (!r)
		return 0;
	seq_bump(r);
	r->tid = p->pid;
	r->tgid = p->tgid;
	r->exec_gen++;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);
	seq_bump(r);
	return 0;
}

/*
 * A thread renamed (prctl, pthread_setname_np, /proc/.../comm). The renamer may be another
 * thread, so this write does not take part in seq: at worst a reader sees a torn name once.
 */
SEC("tp_btf/task_rename")
int BPF_PROG(on_rename, struct task_struct *task, const char *comm)
{
	struct task_slot *ts = bpf_task_storage_get(&task_slots, task, 0, 0);
	struct record *r;
	__u32 idx;

	if (!ts || !ts->slot)
		return 0;
	idx = ts->slot - 1;
	r = bpf_map_lookup_elem(&records, &idx);
	if (r)
		bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm);
	return 0;
}
