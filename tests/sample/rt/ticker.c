/*
 * A test program for the time windows: for argv[1] seconds (default 1)
 * it repeats, every few milliseconds, a region with a nested region, a
 * mark and a range inside, computing about a millisecond in the inner
 * region.  Uses the kscope user API, so it runs without kscope too.
 * Prints "done" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kscope/user.h"

static volatile double sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	double end = now() + secs;
	struct timespec nap = { 0, 2000000 };

	while (now() < end) {
		uint64_t r;
		double t0;

		kscope_region_push("round");
		kscope_region_push("compute");
		r = kscope_range_start("range");
		kscope_mark("tick");
		t0 = now();
		while (now() - t0 < 0.001)
			sink = sink * 1.0000001 + 1e-9;
		kscope_range_end(r);
		kscope_region_pop();
		kscope_region_pop();
		nanosleep(&nap, NULL);
	}
	printf("done\n");
	return 0;
}
