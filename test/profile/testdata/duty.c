// SPDX-License-Identifier: Apache-2.0
// Three threads on CPU for different shares of the time, each in a function of its own:
// "full" spins in spin_full all the time, "half" in spin_half 35 ms of every 70, "fifth"
// in spin_fifth 14 ms of every 70. They start when a line comes on stdin, run for the
// seconds given (default 10), and each then prints "<thread> <tid> <its CPU ns since the
// start>" (CLOCK_THREAD_CPUTIME_ID: the kernel's count, schedstat's). The process exits
// when stdin closes: alive, its stacks can still be named. Built with frame pointers, so
// that a user stack walk reaches main's callers.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long run_ns;
static pthread_barrier_t go;

static long long now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Spins until the monotonic clock reaches end. */
__attribute__((noinline)) void spin_full(long long end)
{
	while (now_ns(CLOCK_MONOTONIC) < end)
		__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void spin_half(long long end)
{
	while (now_ns(CLOCK_MONOTONIC) < end)
		__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void spin_fifth(long long end)
{
	while (now_ns(CLOCK_MONOTONIC) < end)
		__asm__ volatile("" ::: "memory");
}

struct duty {
	const char *name;
	void (*spin)(long long);
	long long on_ns, period_ns;
};

static void *run(void *arg)
{
	struct duty *d = arg;
	long long start, cpu, end, next;

	pthread_setname_np(pthread_self(), d->name);
	pthread_barrier_wait(&go);
	start = now_ns(CLOCK_MONOTONIC);
	cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	end = start + run_ns;
	for (next = start; next < end; next += d->period_ns) {
		long long stop = next + d->on_ns;
		struct timespec rest;

		d->spin(stop < end ? stop : end);
		if (d->on_ns == d->period_ns)
			continue;
		rest.tv_sec = (next + d->period_ns) / 1000000000LL;
		rest.tv_nsec = (next + d->period_ns) % 1000000000LL;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &rest, NULL);
	}
	printf("%s %d %lld\n", d->name, gettid(), now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct duty duties[] = {
		{"full", spin_full, 70000000, 70000000},
		{"half", spin_half, 35000000, 70000000},
		{"fifth", spin_fifth, 14000000, 70000000},
	};
	pthread_t threads[3];
	char line[16];
	int i;

	run_ns = (argc > 1 ? atoll(argv[1]) : 10) * 1000000000LL;
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_barrier_init(&go, NULL, 4);
	for (i = 0; i < 3; i++)
		pthread_create(&threads[i], NULL, run, &duties[i]);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	pthread_barrier_wait(&go);
	for (i = 0; i < 3; i++)
		pthread_join(threads[i], NULL);
	while (fgets(line, sizeof(line), stdin))
		;
	return 0;
}
