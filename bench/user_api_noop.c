/*
 * The cost of the kscope user API when kscope is not there: the program
 * linked against libkscope-user.so, whose functions return at once.  Times
 * N iterations (default 10^8) of an empty loop, then of each kind of call,
 * and prints per call the time, the time beyond the empty loop, and the
 * ratio to the empty loop.  Run through bench/user_api.sh.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kscope/user.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void report(const char *what, double t, double empty, long n, int calls)
{
	double per = t / (double)n / calls * 1e9;

	printf("%-28s %6.2f ns/call  %+6.2f ns over the empty loop  ratio %.2f\n", what, per,
	       (t - empty) / (double)n / calls * 1e9, t / empty);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000000L;
	double t0, empty, t;

	if (n < 1)
		n = 1;
	/* The barrier keeps the compiler from deleting the loop. */
	t0 = now();
	for (long i = 0; i < n; i++)
		__asm__ volatile("" ::: "memory");
	empty = now() - t0;
	printf("%-28s %6.2f ns/iteration (%ld iterations)\n", "empty loop", empty / (double)n * 1e9, n);

	t0 = now();
	for (long i = 0; i < n; i++)
		kscope_mark("mark");
	t = now() - t0;
	report("kscope_mark", t, empty, n, 1);

	t0 = now();
	for (long i = 0; i < n; i++) {
		kscope_region_push("region");
		kscope_region_pop();
	}
	t = now() - t0;
	report("kscope_region_push+pop", t, empty, n, 2);

	t0 = now();
	for (long i = 0; i < n; i++)
		kscope_range_end(kscope_range_start("range"));
	t = now() - t0;
	report("kscope_range_start+end", t, empty, n, 2);
	return 0;
}
