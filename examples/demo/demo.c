/*
 * kscope's demo program: four worker threads each multiply a pair of
 * matrices (naive and blocked, to show the difference a loop order makes)
 * and then reduce the result, with the phases marked by kscope's user API.
 * `make demo` profiles it with `kscope sample` and prints the report.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <kscope/user.h>

#define N 384
#define WORKERS 4
#define ROUNDS 3

struct work {
	double a[N][N], b[N][N], c[N][N];
	double sum;
};

/* i-j-k order: the inner loop walks b by columns, one cache line per
 * element. */
__attribute__((noinline)) static void matmul_naive(struct work *w)
{
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;

			for (int k = 0; k < N; k++)
				s += w->a[i][k] * w->b[k][j];
			w->c[i][j] = s;
		}
}

/* i-k-j order: every loop walks memory in order. */
__attribute__((noinline)) static void matmul_blocked(struct work *w)
{
	for (int i = 0; i < N; i++) {
		for (int j = 0; j < N; j++)
			w->c[i][j] = 0;
		for (int k = 0; k < N; k++) {
			double aik = w->a[i][k];

			for (int j = 0; j < N; j++)
				w->c[i][j] += aik * w->b[k][j];
		}
	}
}

__attribute__((noinline)) static double reduce(const struct work *w)
{
	double s = 0;

	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			s += w->c[i][j];
	return s;
}

static void *worker(void *arg)
{
	struct work *w = arg;

	for (int r = 0; r < ROUNDS; r++) {
		kscope_region_push("naive");
		matmul_naive(w);
		kscope_region_pop();
		kscope_region_push("blocked");
		matmul_blocked(w);
		kscope_region_pop();
		kscope_region_push("reduce");
		w->sum += reduce(w);
		kscope_region_pop();
	}
	return NULL;
}

int main(void)
{
	pthread_t t[WORKERS];
	struct work *w = calloc(WORKERS, sizeof(*w));
	double total = 0;

	if (!w)
		return 1;
	for (int n = 0; n < WORKERS; n++)
		for (int i = 0; i < N; i++)
			for (int j = 0; j < N; j++) {
				w[n].a[i][j] = (i + j + n) % 7;
				w[n].b[i][j] = (i * j + n) % 5;
			}
	kscope_mark("start");
	for (int n = 0; n < WORKERS; n++)
		if (pthread_create(&t[n], NULL, worker, &w[n]) != 0)
			return 1;
	for (int n = 0; n < WORKERS; n++)
		pthread_join(t[n], NULL);
	for (int n = 0; n < WORKERS; n++)
		total += w[n].sum;
	printf("demo: checksum %.0f\n", total);
	free(w);
	return 0;
}
