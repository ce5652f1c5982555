/*
 * Benchmark workload for bench/memtools.sh: C = A x B for N x N matrices
 * of doubles (argv[1], default 1920: 84 MiB for the three), the rows of C
 * split among T threads (argv[2], default 4), each computing its rows in
 * i-k-j order (unit stride through B and C), blocked over k and j.  The
 * matrices are filled by the threads that use them; each element of C is
 * summed in the same order whatever T is, so the printed checksum
 * depends on N only.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BK 128	/* tile of B: BK rows ... */
#define BJ 512	/* ... by BJ columns, 512 KiB */

struct rows {
	double *a, *b, *c;	/* shared; this thread writes only its rows */
	long n, first, last;	/* rows [first, last) */
};

static pthread_barrier_t ready;

static void *worker(void *arg)
{
	const struct rows *r = arg;
	long n = r->n;

	/* Each thread fills its rows of A, B and C; every thread reads all
	 * of B, so they wait for each other before multiplying. */
	for (long i = r->first; i < r->last; i++)
		for (long j = 0; j < n; j++) {
			r->a[i * n + j] = (double)((i * 7 + j * 3) % 17) / 17.0;
			r->b[i * n + j] = (double)((i * 5 + j * 11) % 13) / 13.0 - 0.5;
			r->c[i * n + j] = 0.0;
		}
	pthread_barrier_wait(&ready);
	/* Blocked over k and j, so a BK x BJ tile of B stays in cache while
	 * the thread's rows go past it.  For each c[i][j] the products are
	 * still added in increasing k. */
	for (long kk = 0; kk < n; kk += BK)
		for (long jj = 0; jj < n; jj += BJ) {
			long kend = kk + BK < n ? kk + BK : n;
			long jend = jj + BJ < n ? jj + BJ : n;

			for (long i = r->first; i < r->last; i++) {
				double *ci = r->c + i * n;

				for (long k = kk; k < kend; k++) {
					double aik = r->a[i * n + k];
					const double *bk = r->b + k * n;

					for (long j = jj; j < jend; j++)
						ci[j] += aik * bk[j];
				}
			}
		}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1920;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	double *a, *b, *c, checksum = 0;
	struct rows *r;
	pthread_t *t;

	if (n < 1 || nthreads < 1) {
		fprintf(stderr, "usage: mt_matmul [N] [THREADS]\n");
		return 2;
	}
	a = malloc((size_t)(n * n) * sizeof(double));
	b = malloc((size_t)(n * n) * sizeof(double));
	c = malloc((size_t)(n * n) * sizeof(double));
	r = calloc((size_t)nthreads, sizeof(*r));
	t = calloc((size_t)nthreads, sizeof(*t));
	if (!a || !b || !c || !r || !t ||
	    pthread_barrier_init(&ready, NULL, (unsigned)nthreads) != 0)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		r[i] = (struct rows){ a, b, c, n, n * i / nthreads, n * (i + 1) / nthreads };
		if (pthread_create(&t[i], NULL, worker, &r[i]) != 0)
			return 1;
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (long i = 0; i < n * n; i++)
		checksum += c[i] * (double)(i % 7 + 1);
	printf("matmul %ld: checksum %.6e\n", n, checksum);
	pthread_barrier_destroy(&ready);
	free(t);
	free(r);
	free(a);
	free(b);
	free(c);
	return 0;
}
