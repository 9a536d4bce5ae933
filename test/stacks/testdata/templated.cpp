// SPDX-License-Identifier: Apache-2.0
// A thread spinning in a function template, for demangled names in user stacks. Runs for
// the seconds given (default 10).
#include <chrono>
#include <cstdlib>
#include <thread>

static volatile bool stop;

namespace work {
template <typename T> __attribute__((noinline)) T spin(T step)
{
	T total = 0;
	while (!stop)
		total += step;
	return total;
}
} // namespace work

int main(int argc, char **argv)
{
	std::thread t([] { work::spin<long>(3); });
	std::this_thread::sleep_for(std::chrono::seconds(argc > 1 ? std::atoi(argv[1]) : 10));
	stop = true;
	t.join();
	return 0;
}
