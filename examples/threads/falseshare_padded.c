/*
 * The fix for falseshare.c, for `kscope falseshare` and `kscope
 * contention`: the same 4 threads and increments, but each counter is
 * padded to 64 bytes and the array is 64-byte aligned, so every counter
 * has a cache line of its own.  Same output as falseshare.c; expected:
 * no false sharing, and no invalidations beyond the cold misses.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

struct padded_counter {
	int v;
	char pad[60];	/* the rest of the 64-byte line */
};
_Static_assert(sizeof(struct padded_counter) == 64, "one counter per cache line");

_Alignas(64) struct padded_counter counters[NTHREADS];
static long iterations = 1000000;

static void *worker(void *arg)
{
	volatile int *c = &counters[(long)arg].v;

	for (long i = 0; i < iterations; i++)
		(*c)++;
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
