/*
 * False-sharing example for `kscope falseshare` and `kscope contention`:
 * 4 threads, each incrementing its own element of the global array
 * `counters`, N times (argv[1], default 1000000).  The four ints are
 * adjacent and the array is 64-byte aligned, so they share one cache
 * line: no thread reads another's counter, yet every increment
 * invalidates the line in the other cores.  The increment is the
 * marked line; falseshare_padded.c is the fix.  The counter is updated
 * through a volatile pointer so that each iteration loads and stores
 * memory at -O1, and each worker returns its final count, so the main
 * thread never touches the line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

_Alignas(64) int counters[NTHREADS];
static long iterations = 1000000;

static void *worker(void *arg)
{
	volatile int *c = &counters[(long)arg];

	for (long i = 0; i < iterations; i++)
		(*c)++; /* FALSE SHARING */
	return (void *)(long)*c;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	long total = 0;

	if (argc > 1)
		iterations = atol(argv[1]);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	printf("counters");
	for (int i = 0; i < NTHREADS; i++) {
		void *count;

		pthread_join(t[i], &count);
		printf(" %ld", (long)count);
		total += (long)count;
	}
	printf(" total %ld\n", total);
	return 0;
}
