/*
 * The kernels the host chip of kscope predict is measured with
 * (calib_chip.c): a streaming store for the UB->GM path (the GM->UB path
 * uses the read kernels of calib_kernels.c), one plain C loop per vector
 * instruction and data type, the matrix multiply-add of a tile, and a
 * chain of scalar integer operations.
 *
 * The two kinds of kernel are written differently on purpose.  A path
 * says how fast the memory system moves data at a given footprint, so
 * the store kernel, like the read kernels, uses the widest vectors the CPU
 * has (chosen at run time) and keeps as many stores in flight as it can:
 * what is measured is the memory, not the core.  An instruction says how
 * fast the core computes on data at hand, as a C program compiled by the
 * compiler that built kscope computes it: so each is the loop a C
 * programmer writes (restrict pointers, one statement per element), and
 * this file is compiled with -O2 for the generic target, like a program
 * built with `cc -O2`, and -falign-loops=32, without sanitizers, in every
 * build type (CMakeLists.txt says why).  The loops take their operands
 * through void pointers so that one table serves every data type; each
 * is a separate function, called through the table, so the compiler can
 * neither drop a call nor fold two calls into one.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KS_CHIP_X86 1
#else
#define KS_CHIP_X86 0
#endif

#include "calib_int.h"

const char *const ks_calib_dt_names[KS_CALIB_NDT] = { "fp32", "fp64", "int32" };
const size_t ks_calib_dt_bytes[KS_CALIB_NDT] = { 4, 8, 4 };

/* ---------------------------------------------------------------------
 * The store kernels (the UB->GM path)
 * --------------------------------------------------------------------- */

typedef double v2d __attribute__((vector_size(16)));

static bool always(void)
{
	return true;
}

/* Stores v into n doubles at p (n a multiple of 8), four vectors a round.
 * The empty asm after the loop keeps the stores: the caller reads the
 * buffer back only once, after many passes. */
static void fill_vec(double *p, size_t n, double v)
{
	v2d x = { v, v };

	for (size_t i = 0; i < n; i += 8) {
		memcpy(p + i, &x, sizeof(x));
		memcpy(p + i + 2, &x, sizeof(x));
		memcpy(p + i + 4, &x, sizeof(x));
		memcpy(p + i + 6, &x, sizeof(x));
	}
	__asm__ __volatile__("" ::"r"(p) : "memory");
}

#if KS_CHIP_X86
static bool has_avx512f(void)
{
	return ks_calib_cpu_has(KS_CPU_AVX512F);
}

static bool has_avx2(void)
{
	return ks_calib_cpu_has(KS_CPU_AVX2);
}

__attribute__((target("avx512f")))
static void fill_avx512(double *p, size_t n, double v)
{
	__m512d x = _mm512_set1_pd(v);

	for (size_t i = 0; i < n; i += 32) {
		_mm512_store_pd(p + i, x);
		_mm512_store_pd(p + i + 8, x);
		_mm512_store_pd(p + i + 16, x);
		_mm512_store_pd(p + i + 24, x);
	}
	__asm__ __volatile__("" ::"r"(p) : "memory");
}

__attribute__((target("avx2")))
static void fill_avx2(double *p, size_t n, double v)
{
	__m256d x = _mm256_set1_pd(v);

	for (size_t i = 0; i < n; i += 16) {
		_mm256_store_pd(p + i, x);
		_mm256_store_pd(p + i + 4, x);
		_mm256_store_pd(p + i + 8, x);
		_mm256_store_pd(p + i + 12, x);
	}
	__asm__ __volatile__("" ::"r"(p) : "memory");
}
#endif

#if KS_CHIP_X86
#define PORTABLE_STORE "SSE2"
#elif defined(__aarch64__)
#define PORTABLE_STORE "NEON"
#else
#define PORTABLE_STORE "generic vectors"
#endif

const struct ks_calib_write_kernel ks_calib_write_kernels[] = {
#if KS_CHIP_X86
	{ "AVX-512F", has_avx512f, fill_avx512, 32 },
	{ "AVX2", has_avx2, fill_avx2, 16 },
#endif
	{ PORTABLE_STORE, always, fill_vec, 8 },
	{ NULL, NULL, NULL, 0 },
};

const struct ks_calib_write_kernel *ks_calib_write_kernel_best(void)
{
	const struct ks_calib_write_kernel *k = ks_calib_write_kernels;

	while (!k->supported())
		k++;
	return k;
}

/* ---------------------------------------------------------------------
 * The vector instructions: one C loop per instruction and data type
 * --------------------------------------------------------------------- */

/* z[i] = OP(x[i], y[i]) */
#define BINARY(fname, T, EXPR)                                                   \
	static void fname(void *zv, const void *xv, const void *yv, size_t n)    \
	{                                                                        \
		T *restrict z = zv;                                              \
		const T *restrict x = xv, *restrict y = yv;                      \
		for (size_t i = 0; i < n; i++) {                                 \
			T a = x[i], b = y[i];                                    \
			z[i] = (EXPR);                                           \
		}                                                                \
	}

/* z[i] = OP(x[i], s), s = y[0]: a vector and a scalar */
#define WITH_SCALAR(fname, T, EXPR)                                              \
	static void fname(void *zv, const void *xv, const void *yv, size_t n)    \
	{                                                                        \
		T *restrict z = zv;                                              \
		const T *restrict x = xv;                                        \
		const T b = *(const T *)yv;                                      \
		for (size_t i = 0; i < n; i++) {                                 \
			T a = x[i];                                              \
			z[i] = (EXPR);                                           \
		}                                                                \
	}

/* z[i] = OP(x[i]) (TO may differ from T: vconv) */
#define UNARY(fname, T, TO, EXPR)                                                \
	static void fname(void *zv, const void *xv, const void *yv, size_t n)    \
	{                                                                        \
		TO *restrict z = zv;                                             \
		const T *restrict x = xv;                                        \
		(void)yv;                                                        \
		for (size_t i = 0; i < n; i++) {                                 \
			T a = x[i];                                              \
			z[i] = (EXPR);                                           \
		}                                                                \
	}

/* z[0] = the sum of x[0..n-1], one accumulator, as the loop is written */
#define REDUCE_SUM(fname, T)                                                     \
	static void fname(void *zv, const void *xv, const void *yv, size_t n)    \
	{                                                                        \
		const T *restrict x = xv;                                        \
		T s = 0;                                                         \
		(void)yv;                                                        \
		for (size_t i = 0; i < n; i++)                                   \
			s += x[i];                                               \
		*(T *)zv = s;                                                    \
	}

#define REDUCE_MAX(fname, T)                                                     \
	static void fname(void *zv, const void *xv, const void *yv, size_t n)    \
	{                                                                        \
		const T *restrict x = xv;                                        \
		T s = x[0];                                                      \
		(void)yv;                                                        \
		for (size_t i = 1; i < n; i++)                                   \
			s = x[i] > s ? x[i] : s;                                 \
		*(T *)zv = s;                                                    \
	}

/* The three data types' versions of an elementwise binary instruction. */
#define BINARY3(op, EXPR)                                                        \
	BINARY(op##_f32, float, EXPR)                                            \
	BINARY(op##_f64, double, EXPR)                                           \
	BINARY(op##_i32, int32_t, EXPR)

BINARY3(vadd, a + b)
BINARY3(vsub, a - b)
BINARY3(vmul, a * b)
BINARY3(vdiv, a / b)
BINARY3(vmax, a > b ? a : b)
BINARY3(vmin, a < b ? a : b)

WITH_SCALAR(vadds_f32, float, a + b)
WITH_SCALAR(vadds_f64, double, a + b)
WITH_SCALAR(vadds_i32, int32_t, a + b)
WITH_SCALAR(vmuls_f32, float, a * b)
WITH_SCALAR(vmuls_f64, double, a * b)
WITH_SCALAR(vmuls_i32, int32_t, a * b)

UNARY(vexp_f32, float, float, expf(a))
UNARY(vexp_f64, double, double, exp(a))
UNARY(vln_f32, float, float, logf(a))
UNARY(vln_f64, double, double, log(a))
UNARY(vabs_f32, float, float, fabsf(a))
UNARY(vabs_f64, double, double, fabs(a))
UNARY(vabs_i32, int32_t, int32_t, a < 0 ? -a : a)
UNARY(vrelu_f32, float, float, a > 0 ? a : 0)
UNARY(vrelu_f64, double, double, a > 0 ? a : 0)
UNARY(vrelu_i32, int32_t, int32_t, a > 0 ? a : 0)
UNARY(vconv_f32, float, double, (double)a)
UNARY(vconv_f64, double, float, (float)a)
UNARY(vconv_i32, int32_t, float, (float)a)

REDUCE_SUM(vreduce_sum_f32, float)
REDUCE_SUM(vreduce_sum_f64, double)
REDUCE_SUM(vreduce_sum_i32, int32_t)
REDUCE_MAX(vreduce_max_f32, float)
REDUCE_MAX(vreduce_max_f64, double)
REDUCE_MAX(vreduce_max_i32, int32_t)

#define ALL3(op) { op##_f32, op##_f64, op##_i32 }
#define FLOATS(op) { op##_f32, op##_f64, NULL }
#define NO_CONV { -1, -1, -1 }

const struct ks_calib_vec_kernel ks_calib_vec_kernels[] = {
	{ "vadd", KS_CALIB_VEC_BINARY, ALL3(vadd), NO_CONV },
	{ "vsub", KS_CALIB_VEC_BINARY, ALL3(vsub), NO_CONV },
	{ "vmul", KS_CALIB_VEC_BINARY, ALL3(vmul), NO_CONV },
	{ "vdiv", KS_CALIB_VEC_BINARY, ALL3(vdiv), NO_CONV },
	{ "vmax", KS_CALIB_VEC_BINARY, ALL3(vmax), NO_CONV },
	{ "vmin", KS_CALIB_VEC_BINARY, ALL3(vmin), NO_CONV },
	{ "vadds", KS_CALIB_VEC_SCALAR, ALL3(vadds), NO_CONV },
	{ "vmuls", KS_CALIB_VEC_SCALAR, ALL3(vmuls), NO_CONV },
	{ "vexp", KS_CALIB_VEC_UNARY, FLOATS(vexp), NO_CONV },
	{ "vln", KS_CALIB_VEC_UNARY, FLOATS(vln), NO_CONV },
	{ "vabs", KS_CALIB_VEC_UNARY, ALL3(vabs), NO_CONV },
	{ "vrelu", KS_CALIB_VEC_UNARY, ALL3(vrelu), NO_CONV },
	{ "vconv", KS_CALIB_VEC_CONV, ALL3(vconv),
	  { KS_CALIB_FP64, KS_CALIB_FP32, KS_CALIB_FP32 } },
	{ "vreduce_sum", KS_CALIB_VEC_REDUCE, ALL3(vreduce_sum), NO_CONV },
	{ "vreduce_max", KS_CALIB_VEC_REDUCE, ALL3(vreduce_max), NO_CONV },
	{ NULL, KS_CALIB_VEC_BINARY, { NULL, NULL, NULL }, NO_CONV },
};

/* ---------------------------------------------------------------------
 * mmad: c[m][n] += a[m][k] * b[k][n], row-major, the i-p-j loop order
 * (the innermost loop runs along rows of b and c)
 * --------------------------------------------------------------------- */

#define MMAD(fname, T)                                                           \
	static void fname(void *cv, const void *av, const void *bv, size_t m,    \
			  size_t k, size_t n)                                    \
	{                                                                        \
		T *restrict c = cv;                                              \
		const T *restrict a = av, *restrict b = bv;                      \
		for (size_t i = 0; i < m; i++)                                   \
			for (size_t p = 0; p < k; p++) {                         \
				T s = a[i * k + p];                              \
				for (size_t j = 0; j < n; j++)                   \
					c[i * n + j] += s * b[p * n + j];        \
			}                                                        \
	}

MMAD(mmad_f32, float)
MMAD(mmad_f64, double)
MMAD(mmad_i32, int32_t)

ks_calib_mmad_fn *const ks_calib_mmad_kernels[KS_CALIB_NDT] = {
	mmad_f32, mmad_f64, mmad_i32,
};

/* ---------------------------------------------------------------------
 * Scalar work
 * --------------------------------------------------------------------- */

uint64_t ks_calib_scalar_chain(uint64_t x, long ops)
{
	/* Four dependent integer operations a round (add, shift, xor, add):
	 * each waits for the one before, as an index or address computation
	 * does. */
	for (long i = 0; i < ops; i += 4) {
		x += (uint64_t)i;
		x ^= x >> 7;
		x += 0x9e3779b97f4a7c15ull;
	}
	return x;
}
