/*
 * The hottest line is off the critical path: a helper thread runs line H
 * all the time, on work nobody waits for, while the main thread's rounds
 * (the progress point "round") are line M's work and then a wait of the
 * same length (a sleep, as for I/O).  A sampling profile puts H first,
 * twice M's samples; the causal profile's known answer (docs/causal.md)
 * is that speeding H up does nothing, and speeding M up by s speeds the
 * program up by s / 2 (half of each round is M).  The test builds it with
 * M's work cut to 50% (-DM_PERCENT=50) to measure the real speedup.
 *
 *   offpath [ROUNDS]      (default 300)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifdef USE_COZ
#include <coz.h>
#define PROGRESS(name) COZ_PROGRESS_NAMED(name)
#else
#include <kscope/user.h>
#define PROGRESS(name) kscope_progress(name)
#endif

#ifndef WORK
#define WORK 2000000L              /* iterations of M's line per round */
#endif
#ifndef M_PERCENT
#define M_PERCENT 100
#endif
#define M_WORK (WORK * M_PERCENT / 100)
#define WAIT_NS 2900000L           /* about WORK's time on this machine */

static atomic_bool done;
static volatile double sink_h, sink_m;

static void *helper(void *unused)
{
	double h = 1.0;

	(void)unused;
	while (!atomic_load(&done)) {
		for (long i = 0; i < 100000; i++) h = h * 1.0000001 + 1e-9; /* line H */
		sink_h = h;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec wait = { 0, WAIT_NS };
	int rounds = argc > 1 ? atoi(argv[1]) : 300;
	pthread_t t;

	if (rounds < 1) {
		fprintf(stderr, "usage: offpath [ROUNDS]  (ROUNDS >= 1)\n");
		return 2;
	}
	pthread_create(&t, NULL, helper, NULL);
	for (int r = 0; r < rounds; r++) {
		double m = 1.0;

		for (long i = 0; i < M_WORK; i++) m = m * 1.0000001 + 1e-9; /* line M */
		sink_m = m;
		nanosleep(&wait, NULL);
		PROGRESS("round");
	}
	atomic_store(&done, true);
	pthread_join(t, NULL);
	printf("offpath: %d rounds\n", rounds);
	return 0;
}
