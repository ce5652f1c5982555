/*
 * Creates and joins many short threads: argv[1] in all (default 2000),
 * at most argv[2] alive at once (default 100).  Each does a little work.
 * Tests that a profiler has no fixed thread limit and copes with thread
 * churn.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

static void *worker(void *arg)
{
	long x = 0;

	for (long i = 0; i < 20000; i++)
		x += i ^ (long)arg;
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int total = argc > 1 ? atoi(argv[1]) : 2000;
	int batch = argc > 2 ? atoi(argv[2]) : 100;
	pthread_t *th;
	int done = 0;

	if (batch < 1)
		batch = 1;
	th = calloc((size_t)batch, sizeof(*th));
	if (!th)
		return 1;
	while (done < total) {
		int n = total - done < batch ? total - done : batch;

		for (int i = 0; i < n; i++)
			if (pthread_create(&th[i], NULL, worker, (void *)(long)(done + i)) != 0) {
				fprintf(stderr, "many_threads: pthread_create failed\n");
				return 1;
			}
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		done += n;
	}
	printf("many_threads: %d threads\n", total);
	free(th);
	return 0;
}
