/*
 * The kernels the CPU ceilings are measured with: a streaming read (the
 * sum of a buffer of doubles) for memory bandwidth, and chains of
 * multiply-adds for peak FLOP/s, each in the widest instruction set the
 * CPU has.
 *
 * kscope is built for the generic target of its architecture (x86-64
 * without AVX), so the wide versions are separate functions compiled for
 * their instruction set with the target attribute and chosen at run time
 * with ks_calib_cpu_has; a version in portable vector extensions
 * (SSE2 on x86-64, the 128-bit vectors of any other architecture) runs
 * everywhere.  Explicit intrinsics make the fused multiply-add certain:
 * in ISO C mode the compilers do not contract a * m + c on their own.
 *
 * Each kernel keeps several independent accumulators in registers, enough
 * to hide the latency of an add or an FMA behind its throughput (a CPU
 * with two FMA units of latency 4 needs 8 chains in flight; 12 leave a
 * margin), and the FMA loops do four rounds per iteration so that the
 * loop's own instructions, and where its branch falls in the instruction
 * cache lines, do not limit it.  Results are returned and checked by the
 * caller, so the compiler cannot drop the loops.  CMakeLists.txt compiles this file with
 * -O2 and without sanitizers in every build type: the kernels are what is
 * being measured.
 */
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define KS_CALIB_X86 1
#else
#define KS_CALIB_X86 0
#endif

#include "calib_int.h"

/* Twelve statements, one per chain. */
#define CHAINS12(S) S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11)
/* Eight or sixteen statements, one per read accumulator. */
#define ACC8(S) S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7)
#define ACC16(S) ACC8(S) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)

_Static_assert(KS_CALIB_FMA_CHAINS == 12, "CHAINS12 writes twelve chains");

/* ---------------------------------------------------------------------
 * Portable versions: GCC/clang vector extensions of 16 bytes
 * --------------------------------------------------------------------- */

typedef double v2d __attribute__((vector_size(16)));
typedef float v4f __attribute__((vector_size(16)));

static bool always(void)
{
	return true;
}

static double read_vec(const double *p, size_t n, long passes)
{
	v2d s0 = { 0, 0 }, s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0,
	    s7 = s0, v;

	for (long r = 0; r < passes; r++) {
		for (size_t i = 0; i < n; i += 16) {
#define READ_VEC(k) memcpy(&v, p + i + 2 * (k), sizeof(v)); s##k += v;
			ACC8(READ_VEC)
#undef READ_VEC
		}
		/* Each pass reads the memory again. */
		__asm__ __volatile__("" ::: "memory");
	}
	s0 += s1 + s2 + s3 + s4 + s5 + s6 + s7;
	return s0[0] + s0[1];
}

static double fma_vec_f32(long iters, float m, float c)
{
	v4f vm = { m, m, m, m }, vc = { c, c, c, c };
#define INIT(k) v4f a##k = { 0.01f * (k), 0.02f * (k), 0.03f * (k), 0.04f * (k) };
	CHAINS12(INIT)
#undef INIT

	for (long i = 0; i < iters; i += 4) {
#define STEP(k) a##k = a##k * vm + vc;
		CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP)
#undef STEP
	}
	a0 += a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
	return (double)a0[0] + a0[1] + a0[2] + a0[3];
}

static double fma_vec_f64(long iters, double m, double c)
{
	v2d vm = { m, m }, vc = { c, c };
#define INIT(k) v2d a##k = { 0.01 * (k), 0.02 * (k) };
	CHAINS12(INIT)
#undef INIT

	for (long i = 0; i < iters; i += 4) {
#define STEP(k) a##k = a##k * vm + vc;
		CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP)
#undef STEP
	}
	a0 += a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;
	return a0[0] + a0[1];
}

#if KS_CALIB_X86
/* ---------------------------------------------------------------------
 * x86-64: AVX-512F and AVX2 (+FMA)
 * --------------------------------------------------------------------- */

/* What the CPU and the kernel allow, from CPUID and XCR0 (Intel SDM
 * vol. 1, 14.3 and 15.2): AVX state needs OSXSAVE and XCR0 bits 1-2,
 * AVX-512 also bits 5-7.  Asked here, once, when a kernel is chosen, and
 * not through __builtin_cpu_supports: that links libgcc's CPU probe,
 * a constructor that runs its CPUIDs at every start of kscope (each one
 * a trap to the hypervisor on a virtual machine). */
bool ks_calib_cpu_has(enum ks_calib_cpu_feature f)
{
	static int known = -1; /* bit per feature, -1 until asked */
	unsigned a, b, c, d, a7 = 0, b7 = 0, c7 = 0, d7 = 0;
	int v = 0;

	if (known < 0) {
		if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE)) {
			unsigned lo, hi;
			bool ymm, zmm;

			__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
			ymm = (lo & 0x6) == 0x6;
			zmm = ymm && (lo & 0xe0) == 0xe0;
			__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7);
			if (ymm && (b7 & bit_AVX2))
				v |= 1 << KS_CPU_AVX2;
			if (ymm && (c & bit_FMA))
				v |= 1 << KS_CPU_FMA;
			if (zmm && (b7 & bit_AVX512F))
				v |= 1 << KS_CPU_AVX512F;
		}
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return (__atomic_load_n(&known, __ATOMIC_RELAXED) >> f) & 1;
}

static bool has_avx512f(void)
{
	return ks_calib_cpu_has(KS_CPU_AVX512F);
}

static bool has_avx2(void)
{
	return ks_calib_cpu_has(KS_CPU_AVX2);
}

static bool has_avx2_fma(void)
{
	return ks_calib_cpu_has(KS_CPU_AVX2) && ks_calib_cpu_has(KS_CPU_FMA);
}

__attribute__((target("avx512f")))
static double read_avx512(const double *p, size_t n, long passes)
{
	/* Sixteen accumulators: two loads a cycle with an add latency of 4
	 * need eight in flight, and AVX-512 has the registers to spare. */
#define INIT(k) __m512d s##k = _mm512_setzero_pd();
	ACC16(INIT)
#undef INIT
	for (long r = 0; r < passes; r++) {
		for (size_t i = 0; i < n; i += 128) {
#define READ(k) s##k = _mm512_add_pd(s##k, _mm512_load_pd(p + i + 8 * (k)));
			ACC16(READ)
#undef READ
		}
		__asm__ __volatile__("" ::: "memory");
	}
#define SUM(k) s0 = (k) ? _mm512_add_pd(s0, s##k) : s0;
	ACC16(SUM)
#undef SUM
	return _mm512_reduce_add_pd(s0);
}

__attribute__((target("avx2")))
static double read_avx2(const double *p, size_t n, long passes)
{
	double lanes[4];

#define INIT(k) __m256d s##k = _mm256_setzero_pd();
	ACC8(INIT)
#undef INIT
	for (long r = 0; r < passes; r++) {
		for (size_t i = 0; i < n; i += 64) {
#define READ(k) s##k = _mm256_add_pd(s##k, _mm256_load_pd(p + i + 4 * (k)));     \
		s##k = _mm256_add_pd(s##k, _mm256_load_pd(p + i + 32 + 4 * (k)));
			ACC8(READ)
#undef READ
		}
		__asm__ __volatile__("" ::: "memory");
	}
	s0 = _mm256_add_pd(_mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)),
			   _mm256_add_pd(_mm256_add_pd(s4, s5), _mm256_add_pd(s6, s7)));
	_mm256_storeu_pd(lanes, s0);
	return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

__attribute__((target("avx512f")))
static double fma_avx512_f32(long iters, float m, float c)
{
	__m512 vm = _mm512_set1_ps(m), vc = _mm512_set1_ps(c);
#define INIT(k) __m512 a##k = _mm512_set1_ps(0.01f * (k));
	CHAINS12(INIT)
#undef INIT

	for (long i = 0; i < iters; i += 4) {
#define STEP(k) a##k = _mm512_fmadd_ps(a##k, vm, vc);
		CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP)
#undef STEP
	}
#define SUM(k) a0 = (k) ? _mm512_add_ps(a0, a##k) : a0;
	CHAINS12(SUM)
#undef SUM
	return (double)_mm512_reduce_add_ps(a0);
}

__attribute__((target("avx512f")))
static double fma_avx512_f64(long iters, double m, double c)
{
	__m512d vm = _mm512_set1_pd(m), vc = _mm512_set1_pd(c);
#define INIT(k) __m512d a##k = _mm512_set1_pd(0.01 * (k));
	CHAINS12(INIT)
#undef INIT

	for (long i = 0; i < iters; i += 4) {
#define STEP(k) a##k = _mm512_fmadd_pd(a##k, vm, vc);
		CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP)
#undef STEP
	}
#define SUM(k) a0 = (k) ? _mm512_add_pd(a0, a##k) : a0;
	CHAINS12(SUM)
#undef SUM
	return _mm512_reduce_add_pd(a0);
}

__attribute__((target("avx2,fma")))
static double fma_avx2_f32(long iters, float m, float c)
{
	__m256 vm = _mm256_set1_ps(m), vc = _mm256_set1_ps(c);
	float lanes[8];
	double sum = 0;
#define INIT(k) __m256 a##k = _mm256_set1_ps(0.01f * (k));
	CHAINS12(INIT)
#undef INIT

	for (long i = 0; i < iters; i += 4) {
#define STEP(k) a##k = _mm256_fmadd_ps(a##k, vm, vc);
		CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP)
#undef STEP
	}
#define SUM(k) a0 = (k) ? _mm256_add_ps(a0, a##k) : a0;
	CHAINS12(SUM)
#undef SUM
	_mm256_storeu_ps(lanes, a0);
	for (int l = 0; l < 8; l++)
		sum += lanes[l];
	return sum;
}

__attribute__((target("avx2,fma")))
static double fma_avx2_f64(long iters, double m, double c)
{
	__m256d vm = _mm256_set1_pd(m), vc = _mm256_set1_pd(c);
	double lanes[4];
#define INIT(k) __m256d a##k = _mm256_set1_pd(0.01 * (k));
	CHAINS12(INIT)
#undef INIT

	for (long i = 0; i < iters; i += 4) {
#define STEP(k) a##k = _mm256_fmadd_pd(a##k, vm, vc);
		CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP) CHAINS12(STEP)
#undef STEP
	}
#define SUM(k) a0 = (k) ? _mm256_add_pd(a0, a##k) : a0;
	CHAINS12(SUM)
#undef SUM
	_mm256_storeu_pd(lanes, a0);
	return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif /* KS_CALIB_X86 */

/* ---------------------------------------------------------------------
 * The tables
 * --------------------------------------------------------------------- */

#if defined(__x86_64__) || defined(__i386__)
#define PORTABLE_READ "SSE2"
#define PORTABLE_FMA "SSE2 mul+add"
#elif defined(__aarch64__)
#define PORTABLE_READ "NEON"
#define PORTABLE_FMA "NEON mul+add"
#else
#define PORTABLE_READ "generic vectors"
#define PORTABLE_FMA "generic vectors mul+add"
#endif

const struct ks_calib_read_kernel ks_calib_read_kernels[] = {
#if KS_CALIB_X86
	{ "AVX-512F", has_avx512f, read_avx512, 128 },
	{ "AVX2", has_avx2, read_avx2, 64 },
#endif
	{ PORTABLE_READ, always, read_vec, 16 },
	{ NULL, NULL, NULL, 0 },
};

const struct ks_calib_fma_kernel ks_calib_fma_kernels[] = {
#if KS_CALIB_X86
	{ "AVX-512F FMA", true, has_avx512f, fma_avx512_f32, fma_avx512_f64, 16, 8 },
	{ "AVX2 FMA", true, has_avx2_fma, fma_avx2_f32, fma_avx2_f64, 8, 4 },
#endif
	{ PORTABLE_FMA, false, always, fma_vec_f32, fma_vec_f64, 4, 2 },
	{ NULL, false, NULL, NULL, NULL, 0, 0 },
};

const struct ks_calib_read_kernel *ks_calib_read_kernel_best(void)
{
	const struct ks_calib_read_kernel *k = ks_calib_read_kernels;

	while (!k->supported())
		k++;
	return k;
}

const struct ks_calib_fma_kernel *ks_calib_fma_kernel_best(void)
{
	const struct ks_calib_fma_kernel *k = ks_calib_fma_kernels;

	while (!k->supported())
		k++;
	return k;
}
