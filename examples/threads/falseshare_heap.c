/*
 * False sharing on a heap block, for `kscope falseshare`: the pattern of
 * falseshare.c (4 threads, each incrementing its own adjacent int, N
 * times, argv[1], default 1000000) on an array from calloc, so the
 * report names the object by its allocation stack rather than a symbol.
 * The allocator returns 16-byte-aligned blocks and the array is 16
 * bytes, so it never straddles a 64-byte line: all four counters share
 * one.  The main thread never touches the array (calloc zeroes it, and
 * each worker returns its final count), so only the workers' disjoint
 * words meet on the line.  The increment is the marked line.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4

struct job {
	int *counters;	/* the shared heap array */
	int id;
	long iterations;
};

static void *worker(void *arg)
{
	const struct job *j = arg;
	volatile int *c = &j->counters[j->id];
	long n = j->iterations;	/* read once: the loop touches only *c */

	for (long i = 0; i < n; i++)
		(*c)++; /* FALSE SHARING */
	return (void *)(long)*c;
}

static int *make_counters(void)
{
	int *c = calloc(NTHREADS, sizeof(int));

	if (!c)
		exit(1);
	return c;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	struct job jobs[NTHREADS];
	long iterations = argc > 1 ? atol(argv[1]) : 1000000;
	int *counters = make_counters();
	long total = 0;

	for (int i = 0; i < NTHREADS; i++) {
		jobs[i] = (struct job){ counters, i, iterations };
		if (pthread_create(&t[i], NULL, worker, &jobs[i]) != 0)
			return 1;
	}
	printf("counters");
	for (int i = 0; i < NTHREADS; i++) {
		void *count;

		pthread_join(t[i], &count);
		printf(" %ld", (long)count);
		total += (long)count;
	}
	printf(" total %ld\n", total);
	free(counters);
	return 0;
}
