/*
 * Two threads meet at a barrier after each round: the main thread runs
 * line A, the other line B, and A's work is twice B's.  Each round is one
 * visit of the progress point "round".  The causal profile's known answer
 * (docs/causal.md): speeding B up does not speed the program up at all;
 * speeding A up by s speeds it up by s until A and B balance (s = 50%),
 * then no more.  The test builds it with A's work cut to 75% and 50%
 * (-DA_PERCENT=75) to measure the real speedups beside the predicted ones.
 *
 *   balance [ROUNDS]      (default 1000)
 *
 * Built with -DUSE_COZ, it marks progress with coz's COZ_PROGRESS_NAMED
 * (coz.h) instead of kscope_progress, for the runs side by side with coz.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef USE_COZ
#include <coz.h>
#define PROGRESS(name) COZ_PROGRESS_NAMED(name)
#else
#include <kscope/user.h>
#define PROGRESS(name) kscope_progress(name)
#endif

#ifndef WORK
#define WORK 2000000L              /* iterations of B's line per round */
#endif
#ifndef A_PERCENT
#define A_PERCENT 100
#endif
#define A_WORK (2 * WORK * A_PERCENT / 100)
#define B_WORK WORK

static pthread_barrier_t barrier;
static int rounds = 1000;
static volatile double sink;

static void *thread_b(void *unused)
{
	(void)unused;
	for (int r = 0; r < rounds; r++) {
		double x = 1.0;

		for (long i = 0; i < B_WORK; i++) x = x * 1.0000001 + 1e-9; /* line B */
		sink = x;
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		rounds = atoi(argv[1]);
	if (rounds < 1) {
		fprintf(stderr, "usage: balance [ROUNDS]  (ROUNDS >= 1)\n");
		return 2;
	}
	pthread_barrier_init(&barrier, NULL, 2);
	pthread_create(&t, NULL, thread_b, NULL);
	for (int r = 0; r < rounds; r++) {
		double x = 1.0;

		for (long i = 0; i < A_WORK; i++) x = x * 1.0000001 + 1e-9; /* line A */
		sink = x;
		pthread_barrier_wait(&barrier);
		PROGRESS("round");
	}
	pthread_join(t, NULL);
	printf("balance: %d rounds\n", rounds);
	return 0;
}
