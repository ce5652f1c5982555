/*
 * Kernels for the tests of the hotspot analysis (test_hotspot.py): a dot
 * product, saxpy and a matrix product, each a function that is never
 * inlined or cloned, so that --region=NAME and callgrind's
 * --toggle-collect=NAME see the same calls, and a streaming pass over a
 * large array that gives the caches real misses.  Built twice: scalar
 * (-O2 without vectorization) and vectorized (-O3, with dot written
 * with GCC vector extensions, KS_HOT_VECTOR defined).
 *
 *   hot_kernels N M S
 *     dot and saxpy on N floats (N a multiple of 4), the product of two
 *     M x M matrices, a read-modify-write stream over S MiB (0: none).
 *
 * Floating-point operations of the code as written (what the test
 * expects in each function's region):
 *   dot     2N: a multiply and an add per element; the vector build adds
 *           the final sum of its four lanes, three scalar adds: 2N + 3
 *   saxpy   2N: a multiply and an add per element
 *   matmul  2 M^3: a multiply and an add per (i, k, j)
 *   stream  none (integer)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Never inlined, never cloned (a clone would carry another name). */
#if defined(__clang__)
#define KERNEL __attribute__((noinline))
#else
#define KERNEL __attribute__((noinline, noclone))
#endif

float dot(const float *a, const float *b, long n);
void saxpy(float alpha, const float *x, float *y, long n);
void matmul(const float *a, const float *b, float *c, long m);
unsigned long stream(unsigned long *p, long n);

#ifdef KS_HOT_VECTOR
typedef float v4sf __attribute__((vector_size(16)));

KERNEL float dot(const float *a, const float *b, long n)
{
	v4sf acc = { 0, 0, 0, 0 };

	for (long i = 0; i < n; i += 4) {
		v4sf x, y;
		memcpy(&x, a + i, sizeof(x));
		memcpy(&y, b + i, sizeof(y));
		acc += x * y;
	}
	return acc[0] + acc[1] + acc[2] + acc[3];
}
#else
KERNEL float dot(const float *a, const float *b, long n)
{
	float s = 0;

	for (long i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}
#endif

KERNEL void saxpy(float alpha, const float *x, float *y, long n)
{
	for (long i = 0; i < n; i++)
		y[i] = alpha * x[i] + y[i];
}

/* c += a * b, all m x m, row-major; the inner loop runs along rows. */
KERNEL void matmul(const float *a, const float *b, float *c, long m)
{
	for (long i = 0; i < m; i++)
		for (long k = 0; k < m; k++) {
			float aik = a[i * m + k];
			for (long j = 0; j < m; j++)
				c[i * m + j] += aik * b[k * m + j];
		}
}

KERNEL unsigned long stream(unsigned long *p, long n)
{
	unsigned long s = 0;

	for (long i = 0; i < n; i++) {
		p[i] += (unsigned long)i;
		s ^= p[i];
	}
	return s;
}

static float *floats(long n, float seed)
{
	float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(*p));

	if (!p) {
		perror("malloc");
		exit(1);
	}
	for (long i = 0; i < n; i++)
		p[i] = seed + (float)(i % 17) * 0.25f;
	return p;
}

int main(int argc, char **argv)
{
	long n, m, s;
	float *a, *b, *ma, *mb, *mc, d;
	unsigned long *st, h = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: hot_kernels N M S\n");
		return 2;
	}
	n = atol(argv[1]);
	m = atol(argv[2]);
	s = atol(argv[3]) * 1024 * 1024 / (long)sizeof(unsigned long);
	if (n < 0 || n % 4 || m < 0 || s < 0) {
		fprintf(stderr, "hot_kernels: N must be a multiple of 4; M, S >= 0\n");
		return 2;
	}
	a = floats(n, 1.0f);
	b = floats(n, 2.0f);
	ma = floats(m * m, 0.5f);
	mb = floats(m * m, 1.5f);
	mc = floats(m * m, 0.0f);
	d = dot(a, b, n);
	saxpy(0.5f, a, b, n);
	matmul(ma, mb, mc, m);
	if (s) {
		st = calloc((size_t)s, sizeof(*st));
		if (!st) {
			perror("calloc");
			return 1;
		}
		h = stream(st, s);
		free(st);
	}
	printf("dot %g saxpy %g matmul %g stream %lu\n", (double)d,
	       (double)(n ? b[n - 1] : 0), (double)(m ? mc[m * m - 1] : 0), h);
	free(a);
	free(b);
	free(ma);
	free(mb);
	free(mc);
	return 0;
}
