/*
 * Many-threads check for the memory tools: N threads (argv[1], default
 * 300) all alive at once (they meet at a barrier before working and
 * again before exiting), each writing its element of a shared heap array
 * and filling and summing a private buffer.  It prints a sum that
 * depends only on N; the tools must follow all N threads.  Thread stacks
 * are kept at 256 KiB so that N threads fit comfortably under Valgrind.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define PRIVATE_LEN 1024

static pthread_barrier_t start_line, finish_line;
static long *shared;	/* one element per thread, adjacent */

struct worker_arg {
	long id;
	long result;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	long *mine = malloc(PRIVATE_LEN * sizeof(*mine));
	long sum = 0;

	if (!mine)
		exit(1);
	pthread_barrier_wait(&start_line);
	shared[a->id] = a->id + 1;
	for (long i = 0; i < PRIVATE_LEN; i++)
		mine[i] = i ^ a->id;
	for (long i = 0; i < PRIVATE_LEN; i++)
		sum += mine[i];
	a->result = sum;
	free(mine);
	pthread_barrier_wait(&finish_line);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 300;
	pthread_t *t;
	struct worker_arg *args;
	pthread_attr_t attr;
	long sum = 0;

	if (n < 1 || n > 100000)
		return 2;
	t = calloc((size_t)n, sizeof(*t));
	args = calloc((size_t)n, sizeof(*args));
	shared = calloc((size_t)n, sizeof(*shared));
	if (!t || !args || !shared)
		return 1;
	if (pthread_barrier_init(&start_line, NULL, (unsigned)n) != 0 ||
	    pthread_barrier_init(&finish_line, NULL, (unsigned)n) != 0)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (long i = 0; i < n; i++) {
		args[i].id = i;
		if (pthread_create(&t[i], &attr, worker, &args[i]) != 0) {
			fprintf(stderr, "many_threads: cannot create thread %ld\n", i);
			return 1;
		}
	}
	pthread_attr_destroy(&attr);
	for (long i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += shared[i] + args[i].result;
	}
	printf("threads %ld sum %ld\n", n, sum);
	pthread_barrier_destroy(&start_line);
	pthread_barrier_destroy(&finish_line);
	free(t);
	free(args);
	free(shared);
	return 0;
}
