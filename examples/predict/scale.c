/*
 * Scale, y = a * x over N floats: a kernel of kscope predict's accuracy
 * benchmark (bench/predict_accuracy.sh), modelled by scale.kpp.  Prints
 * KSCOPE_TIME_NS, the nanoseconds of one call.
 *
 *   usage: scale N
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_time.h"

struct args {
	float *y, *x;
	float a;
	size_t n;
};

__attribute__((noinline))
static void scale(float *restrict y, const float *restrict x, float a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = a * x[i];
}

static void call(void *p)
{
	struct args *a = p;

	scale(a->y, a->x, a->a, a->n);
}

int main(int argc, char **argv)
{
	struct args a;
	double check = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: scale N\n");
		return 2;
	}
	a.n = (size_t)kt_size(argv[1], "usage: scale N (N from 1 to 2^31)");
	a.a = 0.5f;
	a.x = malloc(a.n * sizeof(float));
	a.y = malloc(a.n * sizeof(float));
	if (!a.x || !a.y) {
		fprintf(stderr, "scale: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < a.n; i++)
		a.x[i] = (float)(i % 100);
	kt_measure(call, &a);
	for (size_t i = 0; i < a.n; i++)
		check += a.y[i];
	printf("scale N=%zu sum=%.0f\n", a.n, check);
	free(a.x);
	free(a.y);
	return 0;
}
