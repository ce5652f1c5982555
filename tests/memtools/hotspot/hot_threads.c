/*
 * Two threads for the tests of the hotspot analysis (test_hotspot.py):
 * each runs worker() over its own array while the main thread waits, so
 * that Valgrind numbers them 2 and 3 (1 is the main thread) and
 * --threads can pick one.
 *
 *   hot_threads N    each worker sums N longs
 */
#include <pthread.h>
#include <stdio.h>

#if defined(__clang__)
#define KS_NOINLINE __attribute__((noinline))
#else
#define KS_NOINLINE __attribute__((noinline, noclone))
#endif
#include <stdlib.h>

struct job {
	long n;
	long *v;
	long sum;
};

/* Both workers and the main thread meet here before any work: both
 * workers are then alive at once and keep the numbers 2 and 3. */
static pthread_barrier_t start;

KS_NOINLINE static void *worker(void *arg)
{
	struct job *j = arg;

	pthread_barrier_wait(&start);
	for (long i = 0; i < j->n; i++) {
		j->v[i] = i * 3;
		j->sum += j->v[i];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct job jobs[2];
	pthread_t th[2];
	long n = argc > 1 ? atol(argv[1]) : 100000;

	for (int i = 0; i < 2; i++) {
		jobs[i].n = n;
		jobs[i].sum = 0;
		jobs[i].v = malloc((size_t)(n > 0 ? n : 1) * sizeof(long));
		if (!jobs[i].v) {
			perror("malloc");
			return 1;
		}
	}
	/* Valgrind gives a new thread the lowest free number: 2, then 3,
	 * as the first cannot end before the second exists. */
	pthread_barrier_init(&start, NULL, 3);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, worker, &jobs[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	pthread_barrier_wait(&start);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("sums %ld %ld\n", jobs[0].sum, jobs[1].sum);
	free(jobs[0].v);
	free(jobs[1].v);
	return 0;
}
