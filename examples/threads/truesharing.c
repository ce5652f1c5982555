/*
 * True-sharing example for `kscope falseshare` and `kscope contention`:
 * 4 threads all add to one global counter `total`, N times each (argv[1],
 * default 1000000), with an atomic add.  The threads really do share the
 * data, so the line's verdict must be true sharing, not false sharing;
 * the increment is the marked line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

long total;
static long iterations = 1000000;

static void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < iterations; i++)
		__atomic_fetch_add(&total, 1, __ATOMIC_RELAXED); /* TRUE SHARING */
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];

	if (argc > 1)
		iterations = atol(argv[1]);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 1;
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	printf("total %ld\n", total);
	return 0;
}
