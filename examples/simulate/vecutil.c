/*
 * vecutil: four loops whose one hot line each uses a known share of the
 * vector lanes, for kscope op --simulate's "Vector Utilization (%)"
 * (docs/simulate.md) and its test (tests/op/simulate_e2e.py, vecutil).
 * Built at -O0 so that each loop's line does one arithmetic instruction
 * per iteration, the one named beside it, and nothing is vectorised or
 * folded; the AVX2 loops use GCC's vector extensions in functions built
 * for AVX2, so that the rest of the program runs on any x86-64.
 *
 *   scalar_float  addss            1 of 8 32-bit lanes   12.5 %
 *   packed_double mulpd xmm        2 of 4 64-bit lanes   50 %
 *   packed_int    paddd xmm        4 of 8 32-bit lanes   50 %
 *   avx_float     vaddps ymm       8 of 8 32-bit lanes   100 %
 *
 *   vecutil [ITERATIONS]    (default 20000); prints the sums.
 */
#include <stdio.h>
#include <stdlib.h>

typedef double v2df __attribute__((vector_size(16)));
typedef int v4si __attribute__((vector_size(16)));
typedef float v8sf __attribute__((vector_size(32)));

static float scalar_float(const float *x, int n)
{
	float s = 0;

	for (int i = 0; i < n; i++)
		s += x[i]; /* VECUTIL scalar_float */
	return s;
}

static double packed_double(v2df m, int n)
{
	v2df p = { 1.0, 1.0 };

	for (int i = 0; i < n; i++)
		p *= m; /* VECUTIL packed_double */
	return p[0] + p[1];
}

static int packed_int(v4si d, int n)
{
	v4si a = { 0, 0, 0, 0 };

	for (int i = 0; i < n; i++)
		a += d; /* VECUTIL packed_int */
	return a[0] + a[1] + a[2] + a[3];
}

/* The vector comes from memory: a 256-bit argument would need AVX in the
 * caller too. */
__attribute__((target("avx2"))) static float avx_float(const float *x, int n)
{
	v8sf a = { 0 }, d;

	__builtin_memcpy(&d, x, sizeof(d));

	for (int i = 0; i < n; i++)
		a += d; /* VECUTIL avx_float */
	return a[0] + a[7];
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	float *x = calloc((size_t)(n > 8 ? n : 8), sizeof(*x));
	v2df m = { 1.0, 1.0 };
	v4si d = { 1, 2, 3, 4 };

	if (!x || n <= 0)
		return 2;
	for (int i = 0; i < (n > 8 ? n : 8); i++)
		x[i] = 1.0f;
	printf("%g %g %d", (double)scalar_float(x, n), packed_double(m, n), packed_int(d, n));
	if (__builtin_cpu_supports("avx2"))
		printf(" %g", (double)avx_float(x, n));
	printf("\n");
	free(x);
	return 0;
}
