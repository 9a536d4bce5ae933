// SPDX-License-Identifier: Apache-2.0
// Threads that run known functions, for the stacks at the tick: "alpha" spins in
// spin_alpha, "beta" in spin_beta, and "alternate" runs phase_alpha and phase_beta in
// turn for 50 ms each, printing "<unix µs> <function>" as each phase begins. Built with
// frame pointers, so that a user stack walk reaches main's callers. Runs for the seconds
// given (default 10).
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int stop;

static long long now_us(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

__attribute__((noinline)) void spin_alpha(void)
{
	while (!stop)
		__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void spin_beta(void)
{
	while (!stop)
		__asm__ volatile("" ::: "memory");
}

/* Spins until the monotonic clock reaches end. */
__attribute__((noinline)) void phase_alpha(long long end)
{
	while (now_us(CLOCK_MONOTONIC) < end)
		__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void phase_beta(long long end)
{
	while (now_us(CLOCK_MONOTONIC) < end)
		__asm__ volatile("" ::: "memory");
}

static void *alpha(void *arg)
{
	pthread_setname_np(pthread_self(), "alpha");
	spin_alpha();
	return arg;
}

static void *beta(void *arg)
{
	pthread_setname_np(pthread_self(), "beta");
	spin_beta();
	return arg;
}

static void *alternate(void *arg)
{
	pthread_setname_np(pthread_self(), "alternate");
	for (int i = 0; !stop; i++) {
		long long end = now_us(CLOCK_MONOTONIC) + 50000;

		printf("%lld %s\n", now_us(CLOCK_REALTIME), i % 2 ? "phase_beta" : "phase_alpha");
		fflush(stdout);
		if (i % 2)
			phase_beta(end);
		else
			phase_alpha(end);
	}
	return arg;
}

int main(int argc, char **argv)
{
	struct timespec run = { .tv_sec = argc > 1 ? atoi(argv[1]) : 10 };
	pthread_t t[3];

	pthread_create(&t[0], NULL, alpha, NULL);
	pthread_create(&t[1], NULL, beta, NULL);
	pthread_create(&t[2], NULL, alternate, NULL);
	nanosleep(&run, NULL);
	stop = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
