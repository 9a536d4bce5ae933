// SPDX-License-Identifier: Apache-2.0
//go:build ignore
// A process whose main thread waits in vfork (D state) while the child sleeps for the
// number of seconds given as the first argument before exiting.
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec ts = { .tv_sec = argc > 1 ? atoi(argv[1]) : 5 };
	pid_t child = vfork();

	if (child == 0) {
		nanosleep(&ts, NULL);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	return 0;
}
