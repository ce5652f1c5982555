/*
 * N worker threads (argv[1], default 4), each busy for about 0.5 seconds
 * of its own CPU time (argv[2] seconds), then joined.  Each worker is
 * named worker-<i>.  Output is fixed, so runs can be compared.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.5;
static volatile double sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double busy(void)
{
	double x = 1.0, start = thread_cpu();

	/* ~10 ms between clock reads (see cpu_split.c) */
	while (thread_cpu() - start < seconds)
		for (int i = 0; i < 3000000; i++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

static void *worker(void *arg)
{
	char name[16];

	snprintf(name, sizeof(name), "worker-%d", (int)(long)arg);
	pthread_setname_np(pthread_self(), name);
	sink = busy();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t *th;

	if (argc > 2)
		seconds = atof(argv[2]);
	if (n < 1)
		n = 1;
	th = calloc((size_t)n, sizeof(*th));
	if (!th)
		return 1;
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(long)i) != 0)
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("threads: %d workers done\n", n);
	free(th);
	return 0;
}
