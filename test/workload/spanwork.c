// SPDX-License-Identifier: Apache-2.0
//go:build ignore
// A process that calls tc_work N times (the first argument), each call on CPU for SPIN_MS
// (second argument) of its own CPU time and then asleep for SLEEP_MS (third); a time that
// ends in "us" is in microseconds ("200us"). It says on stderr "calls" and the
// CLOCK_REALTIME µs before the first call, "idle" and the µs after the last, then sleeps
// IDLE_MS (fourth, default 0) outside any span. GAP_MS
// (fifth, default 0) is CPU time spent after each call, outside any span. Each call
// is between the USDT probes threadcap:work__start (arguments: the call's number and a
// label) and threadcap:work__done, written out as <sys/sdt.h> would (a .note.stapsdt
// note, a .stapsdt.base section, a semaphore in .probes), so that the test needs no
// systemtap headers. At exit it prints the start probe's semaphore: the number of
// tracers that enabled it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TC_PROBE(name, sema, args, ...)                                                     \
	__asm__ __volatile__("990: nop\n"                                                  \
			     ".pushsection .note.stapsdt,\"?\",\"note\"\n"                 \
			     ".balign 4\n"                                                 \
			     ".4byte 992f-991f, 994f-993f, 3\n"                            \
			     "991: .asciz \"stapsdt\"\n"                                   \
			     "992: .balign 4\n"                                            \
			     "993: .8byte 990b\n"                                          \
			     ".8byte _.stapsdt.base\n"                                     \
			     ".8byte " #sema "\n"                                          \
			     ".asciz \"threadcap\"\n"                                      \
			     ".asciz \"" #name "\"\n"                                      \
			     ".asciz \"" args "\"\n"                                       \
			     "994: .balign 4\n"                                            \
			     ".popsection\n"                                               \
			     ".ifndef _.stapsdt.base\n"                                    \
			     ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
			     ".weak _.stapsdt.base\n"                                      \
			     ".hidden _.stapsdt.base\n"                                    \
			     "_.stapsdt.base: .space 1\n"                                  \
			     ".size _.stapsdt.base, 1\n"                                   \
			     ".popsection\n"                                               \
			     ".endif\n" ::__VA_ARGS__)

volatile unsigned short threadcap_work__start_semaphore __attribute__((section(".probes")));
volatile unsigned short threadcap_work__done_semaphore __attribute__((section(".probes")));

static double cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = us % 1000000 * 1000 };

	if (us > 0)
		nanosleep(&ts, NULL);
}

/* A time argument in µs: "200us", or milliseconds without a unit. */
static long arg_us(int argc, char **argv, int i, long ms)
{
	char *end;
	long v;

	if (argc <= i)
		return ms * 1000;
	v = strtol(argv[i], &end, 10);
	return strcmp(end, "us") == 0 ? v : v * 1000;
}

static void spin_for(long us)
{
	double end = cpu_us() + us;

	while (cpu_us() < end)
		;
}

__attribute__((noinline)) void tc_work(long spin_us, long sleep)
{
	spin_for(spin_us);
	sleep_us(sleep);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	long spin = arg_us(argc, argv, 2, 5), sleep = arg_us(argc, argv, 3, 10);
	long idle = arg_us(argc, argv, 4, 0), gap = arg_us(argc, argv, 5, 0);
	struct timespec now;
	/* On the stack: a probe cannot fault in a page the program never touched. */
	char label[] = "spanwork call";

	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(stderr, "calls %lld\n", (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
	for (long i = 0; i < n; i++) {
		TC_PROBE(work__start, threadcap_work__start_semaphore, "-8@%0 8@%1", "r"(i), "r"(label));
		tc_work(spin, sleep);
		TC_PROBE(work__done, threadcap_work__done_semaphore, "-8@%0", "r"(i));
		spin_for(gap);
	}
	clock_gettime(CLOCK_REALTIME, &now);
	fprintf(stderr, "idle %lld\n", (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000);
	sleep_us(idle);
	printf("%d\n", threadcap_work__start_semaphore);
	return 0;
}
