// SPDX-License-Identifier: Apache-2.0
//go:build ignore
// A process that calls tc_work N times (the first argument), each call on CPU for SPIN_MS
// (second argument) of its own CPU time and then asleep for SLEEP_MS (third). Each call
// is between the USDT probes threadcap:work__start (arguments: the call's number and a
// label) and threadcap:work__done, written out as <sys/sdt.h> would (a .note.stapsdt
// note, a .stapsdt.base section, a semaphore in .probes), so that the test needs no
// systemtap headers. At exit it prints the start probe's semaphore: the number of
// tracers that enabled it.
#include <stdio.h>
#include <stdlib.h>
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

static double cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void tc_work(long spin_ms, long sleep_ms)
{
	double end = cpu_ms() + spin_ms;
	struct timespec ts = { .tv_sec = sleep_ms / 1000, .tv_nsec = sleep_ms % 1000 * 1000000 };

	while (cpu_ms() < end)
		;
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	long spin = argc > 2 ? atol(argv[2]) : 5, sleep = argc > 3 ? atol(argv[3]) : 10;
	/* On the stack: a probe cannot fault in a page the program never touched. */
	char label[] = "spanwork call";

	for (long i = 0; i < n; i++) {
		TC_PROBE(work__start, threadcap_work__start_semaphore, "-8@%0 8@%1", "r"(i), "r"(label));
		tc_work(spin, sleep);
		TC_PROBE(work__done, threadcap_work__done_semaphore, "-8@%0", "r"(i));
	}
	printf("%d\n", threadcap_work__start_semaphore);
	return 0;
}
