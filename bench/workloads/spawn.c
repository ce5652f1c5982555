/*
 * Benchmark workload: creates and joins argv[1] short threads (default
 * 4000), at most 8 alive at a time, each doing a little work: the cost of
 * kscope's per-thread setup (timers, buffers, records) dominates here.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *work(void *arg)
{
	double x = 1.0;

	for (long i = 0; i < 200000; i++)
		x = x * 1.0000001 + 1e-9;
	*(double *)arg = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4000;
	double out[8], sum = 0;
	pthread_t t[8];

	for (int done = 0; done < n; done += 8) {
		int k = n - done < 8 ? n - done : 8;

		for (int i = 0; i < k; i++)
			if (pthread_create(&t[i], NULL, work, &out[i]) != 0)
				return 1;
		for (int i = 0; i < k; i++) {
			pthread_join(t[i], NULL);
			sum += out[i];
		}
	}
	printf("%.6f\n", sum);
	return 0;
}
