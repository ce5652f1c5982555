/*
 * A test program for keeping the timers apart in the reports
 * (test_clocks.py): one thread that alternates between burning CPU in
 * burn() (20 ms of its CPU time a round) and sleeping in nap() (30 ms of
 * wall-clock time a round) for argv[1] seconds of wall-clock time
 * (default 1).  The CPU-time sampler should find ~all its samples in
 * burn(); the real-time sampler should split its samples between the two
 * as the wall-clock time splits, which the program measures itself and
 * prints as "burn_ns=N nap_ns=M" on standard output.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static int64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until the thread has used ms more milliseconds of CPU time. */
__attribute__((noinline)) static void burn(int ms)
{
	int64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + (int64_t)ms * 1000000;
	double x = sink;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 200000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

/* Sleeps ms milliseconds of wall-clock time, whatever signals (the
 * samplers') interrupt the sleep. */
__attribute__((noinline)) static void nap(int ms)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + (int64_t)ms * 1000000;
	struct timespec ts = { .tv_sec = end / 1000000000, .tv_nsec = end % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	int64_t start = now_ns(CLOCK_MONOTONIC), burn_ns = 0, nap_ns = 0, t;

	while (now_ns(CLOCK_MONOTONIC) - start < (int64_t)(seconds * 1e9)) {
		/* The empty asm after each call keeps it out of tail
		 * position, so that main stays on the stack below it. */
		t = now_ns(CLOCK_MONOTONIC);
		burn(20);
		__asm__ volatile("" ::: "memory");
		burn_ns += now_ns(CLOCK_MONOTONIC) - t;
		t = now_ns(CLOCK_MONOTONIC);
		nap(30);
		__asm__ volatile("" ::: "memory");
		nap_ns += now_ns(CLOCK_MONOTONIC) - t;
	}
	printf("burn_ns=%lld nap_ns=%lld\n", (long long)burn_ns, (long long)nap_ns);
	return 0;
}
