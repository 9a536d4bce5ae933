/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the block I/O programs (io.bpf.c) record. bpf2go generates the Go mirrors (-type).
 */
#ifndef __THREADCAP_IO_H__
#define __THREADCAP_IO_H__

#include "histogram.h"

/* A block request's operation, from the low bits of its cmd_flags (REQ_OP_MASK). */
enum tc_io_op : __u8 {
	TC_IO_READ = 0,
	TC_IO_WRITE = 1,
	TC_IO_FLUSH = 2,
	TC_IO_DISCARD = 3,
	TC_IO_OTHER = 4, /* secure erase, write zeroes, zone and driver commands */
	TC_IO_OPS = 5,
};

/*
 * A block request in flight, in io_inflight under its struct request's address. Kept
 * apart from the threads' records: a request completes in an interrupt on any CPU, while a
 * record has one writer at a time (see struct record in threadcap.h).
 */
struct tc_io {
	__u64 insert_ns; /* inserted into its queue, or issued if it went straight to the driver */
	__u64 issue_ns;  /* issued to the driver; 0: still queued */
	__u64 done_ns;   /* in io_done: when it completed; in io_inflight: 0 */
	__u64 start_ns;  /* start time of the submitting thread: tells a reused tid apart */
	__u32 tid;       /* the submitting thread */
	__u32 dev;       /* the disk's dev_t, major << 20 | minor */
	__u32 bytes;
	enum tc_io_op op;
};

/* io_done's key: a request's address is reused at once for the next request, so its
 * insert time tells the two apart. */
struct tc_io_done_key {
	__u64 rq;
	__u64 insert_ns;
};

/* io_stats' key: a disk and an operation. */
struct tc_io_key {
	__u32 dev;
	__u32 op; /* enum tc_io_op */
};

/* Buckets of the latency histograms (histogram.h). */
#define TC_IO_BUCKETS TC_HIST_BUCKETS

/* Completed requests of a disk and operation, cumulative since load, per CPU: user space
 * sums the CPUs and subtracts its previous reading. */
struct tc_io_stat {
	__u64 requests;
	__u64 bytes;
	__u64 queue_ns;  /* insert to issue */
	__u64 device_ns; /* issue to completion */
	__u64 queue_hist[TC_IO_BUCKETS];
	__u64 device_hist[TC_IO_BUCKETS];
};

#endif /* __THREADCAP_IO_H__ */
