/*
 * 8 threads with known per-thread call counts, for kscope instrument's
 * tests: thread i (0..7) calls work() (i+1)*PER times.
 * Usage: threads [PER]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 8

static int per = 1000;

__attribute__((noinline)) long work(long x)
{
	long s = 0;

	for (long k = 0; k < 16; k++)
		s += (x ^ k) * 7;
	return s;
}

__attribute__((noinline)) void *worker(void *arg)
{
	long i = (long)arg, acc = 0;

	for (long k = 0; k < (i + 1) * per; k++)
		acc += work(k);
	return (void *)acc;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	long total = 0;

	if (argc > 1)
		per = atoi(argv[1]);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
			return 1;
	for (int i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (long)r;
	}
	printf("total %ld\n", total);
	return 0;
}
