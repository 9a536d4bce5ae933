// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Runs bpf/seqclaim.h's claims, the very functions the kernel side uses, on host threads
 * standing for CPUs, with signal handlers standing for programs that interrupt a write on
 * their CPU (a timer, a wakeup in hard interrupt context): writers on several "CPUs"
 * write the same few records, each write storing one value in every field, while a
 * reader copies them as bpf/records.go does and checks each copy it accepts is whole.
 *
 * Built twice by seqclaim_test.go: as is, and with -DOLD_SEQ, the plain seq++ at both
 * ends of a write that threadcap used before, to show that the harness catches a broken
 * protocol. Prints one line: writes, nested writes, back-offs, accepted torn copies, odd
 * seqs left at the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef uint32_t __u32;
typedef uint64_t __u64;
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* bpf_loop as the kernel runs it: fn until it returns 1, nr times at most. */
static long bpf_loop(__u32 nr, long (*fn)(__u64, void *), void *ctx, __u64 flags)
{
	(void)flags;
	for (__u32 i = 0; i < nr; i++)
		if (fn(i, ctx))
			return i + 1;
	return nr;
}

#include "seqclaim.h"

#define RECORDS 2
#define FIELDS 12
#define CPUS 3

struct record {
	__u32 seq;
	__u64 field[FIELDS];
} __attribute__((aligned(64)));

static struct record recs[RECORDS];
static volatile int stop;
static __thread __u32 this_cpu;
static __thread unsigned int seed;
static __u64 writes, nested, backoffs;

#ifdef OLD_SEQ
static __u32 claim(struct record *r, enum tc_claim_mode mode)
{
	(void)mode;
	r->seq++;
	asm volatile("" ::: "memory");
	return 1;
}
static void release(struct record *r, __u32 c)
{
	(void)c;
	asm volatile("" ::: "memory");
	r->seq++;
}
#else
static __u32 claim(struct record *r, enum tc_claim_mode mode)
{
	return seq_claim(&r->seq, this_cpu, mode);
}
static void release(struct record *r, __u32 c)
{
	seq_release(&r->seq, c);
}
#endif

/* One write: every field the same value, with a pause in the middle to widen it. */
static void write_record(struct record *r, enum tc_claim_mode mode, __u64 *done)
{
	__u32 c = claim(r, mode);
	__u64 v;

	if (!c) {
		__sync_fetch_and_add(&backoffs, 1);
		return;
	}
	v = __sync_add_and_fetch(done, 1);
	for (int i = 0; i < FIELDS; i++) {
		((volatile __u64 *)r->field)[i] = v;
		if (i == FIELDS / 2)
			for (volatile int k = 0; k < 50; k++)
				;
	}
	release(r, c);
}

/* A program interrupting this CPU: a timer's refresh (TRY) or a wakeup (WAIT). */
static void on_signal(int sig)
{
	(void)sig;
	write_record(&recs[rand_r(&seed) % RECORDS], rand_r(&seed) & 1 ? TC_CLAIM_TRY : TC_CLAIM_WAIT,
		     &nested);
}

static void *cpu(void *arg)
{
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN };
	struct itimerspec its = { .it_interval = { 0, 20000 }, .it_value = { 0, 20000 } };
	timer_t timer;

	this_cpu = (__u32)(uintptr_t)arg;
	seed = this_cpu * 7919 + 1;
	sev._sigev_un._tid = syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer) || timer_settime(timer, 0, &its, NULL)) {
		perror("timer");
		exit(2);
	}
	while (!stop)
		write_record(&recs[rand_r(&seed) % RECORDS], rand_r(&seed) % 4 ? TC_CLAIM_WAIT : TC_CLAIM_TRY,
			     &writes);
	timer_delete(timer);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	double seconds = argc > 1 ? atof(argv[1]) : 2;
	pthread_t threads[CPUS];
	struct timespec start, now;
	__u64 copies = 0, torn = 0;
	struct record copy;
	int odd = 0;

	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGRTMIN, &sa, NULL);
	for (int i = 0; i < CPUS; i++)
		pthread_create(&threads[i], NULL, cpu, (void *)(uintptr_t)i);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		/* The reader of bpf/records.go: seq even, copy, seq unchanged. */
		for (int i = 0; i < RECORDS; i++) {
			__u32 s = __atomic_load_n(&recs[i].seq, __ATOMIC_ACQUIRE);

			if (s & 1)
				continue;
			memcpy(&copy, &recs[i], sizeof(copy));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&recs[i].seq, __ATOMIC_RELAXED) != s)
				continue;
			copies++;
			for (int f = 1; f < FIELDS; f++)
				if (copy.field[f] != copy.field[0]) {
					torn++;
					break;
				}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
	stop = 1;
	for (int i = 0; i < CPUS; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < RECORDS; i++)
		odd += recs[i].seq & 1;
	printf("writes=%llu nested=%llu backoffs=%llu copies=%llu torn=%llu odd=%d\n",
	       (unsigned long long)writes, (unsigned long long)nested, (unsigned long long)backoffs,
	       (unsigned long long)copies, (unsigned long long)torn, odd);
	return 0;
}
