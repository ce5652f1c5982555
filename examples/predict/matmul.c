/*
 * Tiled matrix multiply, C += A * B for N x N floats in TILE x TILE tiles:
 * a kernel of kscope predict's accuracy benchmark
 * (bench/predict_accuracy.sh), modelled by matmul.kpp.  Prints
 * KSCOPE_TIME_NS, the nanoseconds of one call (all of C).
 *
 *   usage: matmul N [TILE]     (TILE divides N; default 64, or N if smaller)
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_time.h"

struct args {
	float *c;
	const float *a, *b;
	size_t n, tile;
};

/* One tile of C += a tile of A * a tile of B; rows are n floats apart. */
static void tile_mm(float *restrict c, const float *restrict a, const float *restrict b,
		    size_t n, size_t t)
{
	for (size_t i = 0; i < t; i++)
		for (size_t p = 0; p < t; p++) {
			float s = a[i * n + p];

			for (size_t j = 0; j < t; j++)
				c[i * n + j] += s * b[p * n + j];
		}
}

__attribute__((noinline))
static void matmul(float *c, const float *a, const float *b, size_t n, size_t t)
{
	for (size_t i = 0; i < n; i += t)
		for (size_t p = 0; p < n; p += t)
			for (size_t j = 0; j < n; j += t)
				tile_mm(c + i * n + j, a + i * n + p, b + p * n + j, n, t);
}

static void call(void *p)
{
	struct args *a = p;

	matmul(a->c, a->a, a->b, a->n, a->tile);
}

int main(int argc, char **argv)
{
	static const char usage[] = "usage: matmul N [TILE] (TILE divides N)";
	struct args a;
	float *am, *bm;
	double check = 0;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	a.n = (size_t)kt_size(argv[1], usage);
	a.tile = argc == 3 ? (size_t)kt_size(argv[2], usage) : (a.n < 64 ? a.n : 64);
	if (a.n % a.tile != 0 || a.n > 65536) {
		fprintf(stderr, "%s\n", usage);
		return 2;
	}
	am = malloc(a.n * a.n * sizeof(float));
	bm = malloc(a.n * a.n * sizeof(float));
	a.c = calloc(a.n * a.n, sizeof(float));
	if (!am || !bm || !a.c) {
		fprintf(stderr, "matmul: out of memory\n");
		return 1;
	}
	/* Small integers: every sum is exact, and C stays far from overflow
	 * over the calls. */
	for (size_t i = 0; i < a.n * a.n; i++) {
		am[i] = (float)(i % 3);
		bm[i] = (float)(i % 2);
	}
	a.a = am;
	a.b = bm;
	kt_measure(call, &a);
	for (size_t i = 0; i < a.n * a.n; i++)
		check += a.c[i];
	printf("matmul N=%zu TILE=%zu sum=%.0f\n", a.n, a.tile, check);
	free(am);
	free(bm);
	free(a.c);
	return 0;
}
