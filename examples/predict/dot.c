/*
 * Dot product, s = sum of x[i] * y[i] over N floats: a kernel of kscope
 * predict's accuracy benchmark (bench/predict_accuracy.sh), modelled by
 * dot.kpp.  Prints KSCOPE_TIME_NS, the nanoseconds of one call.
 *
 *   usage: dot N
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_time.h"

struct args {
	const float *x, *y;
	size_t n;
	double total;          /* of every call's result: the calls are kept */
};

__attribute__((noinline))
static float dot(const float *restrict x, const float *restrict y, size_t n)
{
	float s = 0;

	for (size_t i = 0; i < n; i++)
		s += x[i] * y[i];
	return s;
}

static void call(void *p)
{
	struct args *a = p;

	/* As far as the compiler knows the arrays may have changed, so it
	 * cannot compute the sum once for all the calls of a batch. */
	__asm__ volatile("" : : "g"(a->x), "g"(a->y) : "memory");
	a->total += dot(a->x, a->y, a->n);
}

int main(int argc, char **argv)
{
	struct args a;
	float *x, *y;

	if (argc != 2) {
		fprintf(stderr, "usage: dot N\n");
		return 2;
	}
	a.n = (size_t)kt_size(argv[1], "usage: dot N (N from 1 to 2^31)");
	x = malloc(a.n * sizeof(float));
	y = malloc(a.n * sizeof(float));
	if (!x || !y) {
		fprintf(stderr, "dot: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < a.n; i++) {
		x[i] = (float)(i % 3);
		y[i] = 0.5f;
	}
	a.x = x;
	a.y = y;
	a.total = 0;
	kt_measure(call, &a);
	printf("dot N=%zu last=%.0f\n", a.n, (double)dot(x, y, a.n));
	free(x);
	free(y);
	return 0;
}
