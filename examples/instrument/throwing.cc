/*
 * A C++ program that throws through three instrumented frames until told
 * to stop, for kscope instrument --pid's tests: level1 -> level2 ->
 * level3, which throws for every third value; main catches.  It says
 * "ready" on stderr; SIGUSR1 ends it, and it prints on stdout whether
 * every throw was caught by main's handler (with kscope attached, the
 * unwinder must still find the program's own frames).
 * Usage: throwing
 */
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <unistd.h>

static volatile std::sig_atomic_t done;

static void on_signal(int)
{
	done = 1;
}

__attribute__((noinline)) int level3(int x)
{
	if (x % 3 == 0)
		throw std::runtime_error("three");
	return x;
}

__attribute__((noinline)) int level2(int x)
{
	volatile int r = level3(x) + 1;
	return r;
}

__attribute__((noinline)) int level1(int x)
{
	volatile int r = level2(x) + 1;
	return r;
}

int main()
{
	long bad = 0, i = 0;

	std::signal(SIGUSR1, on_signal);
	std::fprintf(stderr, "ready\n");
	while (!done) {
		int x = static_cast<int>(i % 1000);
		bool throws = x % 3 == 0;

		try {
			int r = level1(x);

			if (throws || r != x + 2)
				bad++;
		} catch (const std::runtime_error &) {
			if (!throws)
				bad++;
		}
		if (++i % 100 == 0)
			usleep(500);
	}
	std::printf("%s\n", bad ? "a throw went astray" : "every throw caught");
	return bad != 0;
}
