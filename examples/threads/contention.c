/*
 * Contention example for `kscope contention`: 4 threads each sweep the
 * whole of the 64 KiB global array `shared_table`, writing every element,
 * for R rounds (argv[1], default 20), so the same lines go back and forth
 * between the threads; between sweeps each does private work on its own
 * heap buffer, which causes no invalidations.  The expected report puts
 * most invalidations on `shared_table`, at the marked store.
 * Every thread writes the round number, so the final table (and the
 * printed checksum) does not depend on the interleaving; the stores are
 * relaxed atomics, which compile to plain stores and keep the race
 * defined.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NTHREADS 4
#define TABLE_LEN (64 * 1024 / sizeof(unsigned))
#define PRIVATE_LEN 4096

unsigned shared_table[TABLE_LEN];
static long rounds = 20;

struct worker_result {
	unsigned long private_sum;
};

static void *worker(void *arg)
{
	struct worker_result *res = arg;
	unsigned *mine = malloc(PRIVATE_LEN * sizeof(*mine));
	unsigned long sum = 0;

	if (!mine)
		exit(1);
	for (long r = 0; r < rounds; r++) {
		for (size_t i = 0; i < TABLE_LEN; i++)
			__atomic_store_n(&shared_table[i], (unsigned)r, __ATOMIC_RELAXED); /* CONTENTION */
		for (size_t i = 0; i < PRIVATE_LEN; i++)
			mine[i] = (unsigned)(i * r);
		for (size_t i = 0; i < PRIVATE_LEN; i++)
			sum += mine[i];
	}
	free(mine);
	res->private_sum = sum;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	struct worker_result res[NTHREADS];
	unsigned long table_sum = 0, private_sum = 0;

	if (argc > 1)
		rounds = atol(argv[1]);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, &res[i]) != 0)
			return 1;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		private_sum += res[i].private_sum;
	}
	for (size_t i = 0; i < TABLE_LEN; i++)
		table_sum += shared_table[i];
	printf("table %lu private %lu\n", table_sum, private_sum);
	return 0;
}
