/*
 * A producer and a consumer joined by a bounded queue under a mutex and
 * two condition variables: the producer's line makes each item (one unit
 * of work), the consumer's line handles it (two units), and each item
 * handled is one visit of the progress point "item".  The consumer is the
 * bottleneck, so the causal profile's known answer (docs/causal.md) is
 * the same as balance.c's, reached through blocking and waking instead
 * of a barrier: speeding the producer up does nothing; speeding the
 * consumer up by s speeds the program up by s until the two balance
 * (s = 50%).  The test builds it with the consumer's work cut to 75% and
 * 50% (-DC_PERCENT=75) to measure the real speedups.
 *
 *   pipeline [ITEMS]      (default 2000)
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
#define WORK 1000000L              /* iterations of the producer's line per item */
#endif
#ifndef C_PERCENT
#define C_PERCENT 100
#endif
#define P_WORK WORK
#define C_WORK (2 * WORK * C_PERCENT / 100)
#define QUEUE 4

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static double queue[QUEUE];
static int head, count, items = 2000;
static volatile double sink;

static void *producer(void *unused)
{
	(void)unused;
	for (int n = 0; n < items; n++) {
		double x = n;

		for (long i = 0; i < P_WORK; i++) x = x * 1.0000001 + 1e-9; /* producer */
		pthread_mutex_lock(&lock);
		while (count == QUEUE)
			pthread_cond_wait(&not_full, &lock);
		queue[(head + count) % QUEUE] = x;
		count++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	double sum = 0;

	if (argc > 1)
		items = atoi(argv[1]);
	if (items < 1) {
		fprintf(stderr, "usage: pipeline [ITEMS]  (ITEMS >= 1)\n");
		return 2;
	}
	pthread_create(&t, NULL, producer, NULL);
	for (int n = 0; n < items; n++) {
		double x;

		pthread_mutex_lock(&lock);
		while (count == 0)
			pthread_cond_wait(&not_empty, &lock);
		x = queue[head];
		head = (head + 1) % QUEUE;
		count--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&lock);
		for (long i = 0; i < C_WORK; i++) x = x * 1.0000001 + 1e-9; /* consumer */
		sum += x;
		PROGRESS("item");
	}
	pthread_join(t, NULL);
	sink = sum;
	printf("pipeline: %d items\n", items);
	return 0;
}
