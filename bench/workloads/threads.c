/*
 * Benchmark workload: argv[1] threads (default 8), each doing a fixed
 * amount of compute (argv[2] million iterations, default 100).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long iters;

static void *work(void *arg)
{
	double x = 1.0;

	for (long i = 0; i < iters; i++)
		x = x * 1.0000001 + 1e-9;
	*(double *)arg = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t *t;
	double *out, sum = 0;

	iters = (argc > 2 ? atol(argv[2]) : 100) * 1000000L;
	t = calloc((size_t)n, sizeof(*t));
	out = calloc((size_t)n, sizeof(*out));
	if (!t || !out)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, work, &out[i]) != 0)
			return 1;
	for (int i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += out[i];
	}
	printf("%.6f\n", sum);
	free(t);
	free(out);
	return 0;
}
