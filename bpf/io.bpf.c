// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/*
 * threadcap's block I/O programs: which thread submitted each block request, to which
 * disk, what and how much, and how long it has been queued and at the device. A separate
 * object from the thread records (threadcap.bpf.c), loaded only when io tracking is on.
 *
 * Per request: one hash update at insert (or issue), one lookup at issue, and at
 * completion a lookup, a delete and one per-CPU statistics update; a delete per request
 * merged into another while queued.
 */
#include "include/vmlinux.h"
#include "include/bpf_helpers.h"
#include "include/bpf_tracing.h"
#include "io.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define REQ_OP_MASK 0xff

/* The next tick's instant (CLOCK_MONOTONIC ns), written by user space through the
 * memory-mapped .bss together with threadcap.bpf.c's tick_ns; 0 before the first. */
__u64 tick_ns = 0;

/* Requests not tracked because io_inflight was full. */
__u64 lost_ios = 0;

/*
 * Entries added to io_inflight or io_done, counted after each is in: user space, having
 * found both maps empty, skips reading them until this moves (a read walks every bucket
 * of both, 16384 each, which cost a tick on an idle machine more than the rest of it).
 */
__u64 io_added = 0;

/*
 * Requests in flight, by the address of their struct request. Sized at load time; the
 * kernel reuses a request's memory for later requests, so an entry whose completion was
 * never seen is replaced by its next user (see io_begin), and user space deletes the
 * entries of disks that are gone.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);
	__type(value, struct tc_io);
	__uint(max_entries, 1);
} io_inflight SEC(".maps");

/*
 * Requests that completed after the tick user space is about to read, in flight at it:
 * kept here until it has read them (and deletes them), so that it sees every request in
 * flight at the tick however late it reads. Apart from io_inflight, and under a key of
 * their own, so that user space deleting one never deletes a request in flight that took
 * its address. Sized like io_inflight.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct tc_io_done_key);
	__type(value, struct tc_io);
	__uint(max_entries, 1);
} io_done SEC(".maps");

/* Completed requests per disk and operation. Per CPU, so a completion takes no lock;
 * allocated on a key's first use only. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct tc_io_key);
	__type(value, struct tc_io_stat);
	__uint(max_entries, 1024);
} io_stats SEC(".maps");

/* A new key's first value: too big for the BPF stack. */
static const struct tc_io_stat zero_stat = {};

static __always_inline __u32 dev_of(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;

	if (!disk)
		return 0;
	return ((__u32)disk->major << 20) | (__u32)disk->first_minor;
}

static __always_inline __u8 op_of(struct request *rq)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK;

	return op < TC_IO_OTHER ? op : TC_IO_OTHER;
}

/*
 * Starts tracking rq, submitted by the current task: the submitter is current at insert
 * (a plug is flushed by the task that holds it, when it finishes the plug or sleeps) and at
 * a direct issue (blk-mq's path without a scheduler, taken in submit_bio). A request
 * merged into another is not a request of its own: its bio rides with the one it joined.
 */
static __always_inline void io_begin(struct request *rq, __u64 now, bool issued)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 key = (__u64)rq;
	struct tc_io io = {
		.insert_ns = now,
		.issue_ns = issued ? now : 0,
		.start_ns = task->start_time,
		.tid = task->pid,
		.dev = dev_of(rq),
		.bytes = rq->__data_len,
		.op = op_of(rq),
	};

	if (bpf_map_update_elem(&io_inflight, &key, &io, BPF_ANY))
		__sync_fetch_and_add(&lost_ios, 1);
	else
		__sync_fetch_and_add(&io_added, 1);
}

/*
 * A request enters a queue: the I/O scheduler's, a hardware context's list, or the
 * requeue list it comes back from. Inserted again after a requeue (which cleared its
 * issue time) it keeps its submitter and first insert time.
 */
SEC("tp_btf/block_rq_insert")
int BPF_PROG(on_rq_insert, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct tc_io *io = bpf_map_lookup_elem(&io_inflight, &key);

	if (io && !io->issue_ns)
		return 0;
	io_begin(rq, bpf_ktime_get_ns(), false);
	return 0;
}

/*
 * The driver takes the request (blk_mq_start_request). Merges into it while it was queued
 * have grown it, so its size is read again. A request not seen inserted went straight to
 * the driver, or was inserted before the programs were attached; one already issued and
 * not completed is a reuse of the memory of a request whose completion was not seen.
 */
SEC("tp_btf/block_rq_issue")
int BPF_PROG(on_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct tc_io *io = bpf_map_lookup_elem(&io_inflight, &key);

	if (io && !io->issue_ns) {
		io->issue_ns = now;
		io->bytes = rq->__data_len;
		return 0;
	}
	io_begin(rq, now, true);
	return 0;
}

/*
 * A queued request merged into another (attempt_merge, in the I/O scheduler) is freed
 * without completing: its bios complete with the request it joined, and its memory goes
 * to a later request, whose insert must not take it for this one inserted again.
 */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(on_rq_merge, struct request *rq)
{
	__u64 key = (__u64)rq;

	bpf_map_delete_elem(&io_inflight, &key);
	return 0;
}

/* The driver gives the request back to be issued again later: it is queued again. */
SEC("tp_btf/block_rq_requeue")
int BPF_PROG(on_rq_requeue, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct tc_io *io = bpf_map_lookup_elem(&io_inflight, &key);

	if (io)
		io->issue_ns = 0;
	return 0;
}

static __always_inline void account(struct tc_io *io, __u64 now)
{
	struct tc_io_key key = { .dev = io->dev, .op = io->op };
	__u64 issued = io->issue_ns ? io->issue_ns : io->insert_ns;
	__u64 queue = issued > io->insert_ns ? issued - io->insert_ns : 0;
	__u64 device = now > issued ? now - issued : 0;
	struct tc_io_stat *st = bpf_map_lookup_elem(&io_stats, &key);

	if (!st) {
		bpf_map_update_elem(&io_stats, &key, &zero_stat, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&io_stats, &key);
		if (!st)
			return;
	}
	st->requests++;
	st->bytes += io->bytes;
	st->queue_ns += queue;
	st->device_ns += device;
	st->queue_hist[tc_hist_bucket(queue)]++;
	st->device_hist[tc_hist_bucket(device)]++;
}

/*
 * blk_update_request, for every completion (also of failed requests, and in the batched
 * completion path), before the bytes are consumed: the request is done when nr_bytes
 * covers what remains of it. A request that was in flight at the tick user space is about
 * to read moves to io_done until user space has read it.
 */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(on_rq_complete, struct request *rq, __u8 error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now, tick = tick_ns;
	struct tc_io *io;

	if (nr_bytes < rq->__data_len)
		return 0;
	io = bpf_map_lookup_elem(&io_inflight, &key);
	if (!io)
		return 0;
	now = bpf_ktime_get_ns();
	account(io, now);
	if (tick && io->insert_ns < tick && now >= tick) {
		struct tc_io_done_key done = { .rq = key, .insert_ns = io->insert_ns };

		io->done_ns = now;
		if (!bpf_map_update_elem(&io_done, &done, io, BPF_ANY))
			__sync_fetch_and_add(&io_added, 1);
	}
	bpf_map_delete_elem(&io_inflight, &key);
	return 0;
}
