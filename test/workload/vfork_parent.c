// SPDX-License-Identifier: Apache-2.0
//go:build ignore
// A process whose main thread waits in vfork (D state) while the child sleeps for the
// number of seconds given as the first argument before exiting.
//
// With three arguments, SECONDS D_MS SLEEP_MS, it cycles for SECONDS: D_MS milliseconds
// in vfork (D) while the child sleeps, then SLEEP_MS asleep in nanosleep, and again.
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct timespec ms(long n)
{
	return (struct timespec){ .tv_sec = n / 1000, .tv_nsec = n % 1000 * 1000000 };
}

/* Waits in vfork while the child sleeps for d. */
static void vfork_wait(struct timespec d)
{
	pid_t child = vfork();

	if (child == 0) {
		nanosleep(&d, NULL);
		_exit(0);
	}
	waitpid(child, NULL, 0);
}

int main(int argc, char **argv)
{
	long secs = argc > 1 ? atol(argv[1]) : 5;
	struct timespec now, end;

	if (argc < 4) {
		vfork_wait((struct timespec){ .tv_sec = secs });
		return 0;
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += secs;
	do {
		struct timespec asleep = ms(atol(argv[3]));

		vfork_wait(ms(atol(argv[2])));
		nanosleep(&asleep, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
	return 0;
}
