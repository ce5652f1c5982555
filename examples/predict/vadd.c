/*
 * Vector add, z = x + y over N floats: the first kernel of kscope
 * predict's accuracy benchmark (bench/predict_accuracy.sh), modelled by
 * vadd.kpp.  Prints KSCOPE_TIME_NS, the nanoseconds of one call.
 *
 *   usage: vadd N
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel_time.h"

struct args {
	float *z, *x, *y;
	size_t n;
};

__attribute__((noinline))
static void vadd(float *restrict z, const float *restrict x, const float *restrict y,
		 size_t n)
{
	for (size_t i = 0; i < n; i++)
		z[i] = x[i] + y[i];
}

static void call(void *p)
{
	struct args *a = p;

	vadd(a->z, a->x, a->y, a->n);
}

int main(int argc, char **argv)
{
	struct args a;
	double check = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: vadd N\n");
		return 2;
	}
	a.n = (size_t)kt_size(argv[1], "usage: vadd N (N from 1 to 2^31)");
	a.x = malloc(a.n * sizeof(float));
	a.y = malloc(a.n * sizeof(float));
	a.z = malloc(a.n * sizeof(float));
	if (!a.x || !a.y || !a.z) {
		fprintf(stderr, "vadd: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < a.n; i++) {
		a.x[i] = (float)(i % 100);
		a.y[i] = 1.0f;
	}
	kt_measure(call, &a);
	for (size_t i = 0; i < a.n; i++)
		check += a.z[i];
	printf("vadd N=%zu sum=%.0f\n", a.n, check);
	free(a.x);
	free(a.y);
	free(a.z);
	return 0;
}
