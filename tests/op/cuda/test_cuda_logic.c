/*
 * Unit tests for the pure logic of kscope op's CUDA backend
 * (src/op/cuda/cuda_logic.h), which needs no driver or GPU: kernel base
 * names from mangled and demangled names and --kernel-name filters over
 * them, the allocation map, the classification of launch parameters into
 * pointers and values, and the ELF check that tells a CUDA program.
 *
 * argv[1], when given, is a CUDA example built by nvcc (it must carry
 * .nv_fatbin); tests/op/cuda/CMakeLists.txt passes one where nvcc exists.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda_logic.h"
#include "filter.h"

static const char *example;

static const char *base(const char *name)
{
	static char out[256];

	ks_cu_base_name(name, out, sizeof(out));
	return out;
}

static void test_base_names(void **state)
{
	(void)state;
	/* Names nvcc gave the kernels of examples/cuda (nm of the host stubs,
	 * which carry the kernels' mangled names). */
	assert_string_equal(base("_Z4vaddPKfS0_Pfi"), "vadd");
	assert_string_equal(base("_Z8mm_naivePKfS0_Pfi"), "mm_naive");
	assert_string_equal(base("_Z8mm_tiledILi16EEvPKfS1_Pfi"), "mm_tiled");
	assert_string_equal(base("_Z10reduce_sumPKiiPy"), "reduce_sum");
	assert_string_equal(base("_Z9saxpy_soa3soaf"), "saxpy_soa");
	/* Namespaces, nested templates, const member functions, std::. */
	assert_string_equal(base("_ZN2ns3fooIfEEvPT_"), "foo");
	assert_string_equal(base("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"),
			    "vectorized_elementwise_kernel");
	assert_string_equal(base("_ZNK1a1bEv"), "b");
	assert_string_equal(base("_ZNSt3fooEv"), "foo");
	/* PyTorch 2.11's kernels as an H200 run gave them: lambdas (Ul...E_),
	 * local names (Z...E) in template arguments. */
	assert_string_equal(base("_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_"
				 "impl_nocastINS0_15CUDAFunctor_addIfEEEEvRNS_18TensorIteratorBaseERK"
				 "T_EUliE_EEviT1_"),
			    "elementwise_kernel");
	assert_string_equal(base("_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_"
				 "kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE4_clEvEUl"
				 "dE_St5arrayIPcLm2EELi4E23TrivialOffsetCalculatorILi1EjESB_NS0_6memo"
				 "ry12LoadWithCastILi1EEENSC_13StoreWithCastILi1EEEEEviT_T0_"),
			    "unrolled_elementwise_kernel");
	/* An unnamed type (Ut_) and an external name in a literal (L_Z...E). */
	assert_string_equal(base("_ZN2ns1kINS_Ut_EEEvv"), "k");
	assert_string_equal(base("_ZN2ns1kIXadL_Z1fvEEEEvv"), "k");
	/* Demangled names. */
	assert_string_equal(base("void ns::mm_tiled<16>(float const*, float const*, float*, int)"),
			    "mm_tiled");
	assert_string_equal(base("void at::native::(anonymous namespace)::k<float, (int)4>(float*)"),
			    "k");
	assert_string_equal(base("mm_naive(float const*, float const*, float*, int)"), "mm_naive");
	/* extern "C" and names the rules do not cover: copied whole. */
	assert_string_equal(base("vadd"), "vadd");
	assert_string_equal(base("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
	assert_string_equal(base("_Z"), "_Z");
	assert_string_equal(base("_Z99short"), "_Z99short");
	assert_string_equal(base("_ZN3fooIiE"), "_ZN3fooIiE");
	assert_string_equal(base("_ZNS0_3fooEv"), "_ZNS0_3fooEv");
	assert_string_equal(base("operator()(int)"), "operator()(int)");
	/* Output cut to the buffer, NUL-terminated. */
	{
		char small[4];

		ks_cu_base_name("_Z8mm_naivePKfS0_Pfi", small, sizeof(small));
		assert_string_equal(small, "mm_");
	}
}

static bool matches(const char *pattern, const char *driver_name)
{
	struct ks_op_filter *f;
	char why[256], b[256];
	bool m;

	assert_int_equal(ks_op_filter_compile(pattern, &f, why, sizeof(why)), 0);
	ks_cu_base_name(driver_name, b, sizeof(b));
	m = ks_op_filter_match(f, b);
	ks_op_filter_free(f);
	return m;
}

static void test_filters_on_cuda_names(void **state)
{
	(void)state;
	assert_true(matches("mm", "_Z8mm_naivePKfS0_Pfi"));
	assert_true(matches("mm", "_Z8mm_tiledILi16EEvPKfS1_Pfi"));
	assert_true(matches("mm_t*d", "_Z8mm_tiledILi16EEvPKfS1_Pfi"));
	assert_false(matches("mm_tiled16", "_Z8mm_tiledILi16EEvPKfS1_Pfi"));
	assert_false(matches("vadd", "_Z8mm_naivePKfS0_Pfi"));
	/* The mangling's length prefix is not part of the name. */
	assert_false(matches("8mm", "_Z8mm_naivePKfS0_Pfi"));
	assert_false(matches("_Z", "_Z4vaddPKfS0_Pfi"));
	assert_true(matches("*elementwise", "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_"));
	assert_true(matches("vadd|reduce", "_Z10reduce_sumPKiiPy"));
}

static void test_allocs(void **state)
{
	struct ks_cu_allocs m = { 0 };
	const struct ks_cu_alloc *a;

	(void)state;
	assert_int_equal(ks_cu_allocs_add(&m, 0x1000, 0, KS_CU_ALLOC_DEVICE), -EINVAL);
	assert_int_equal(ks_cu_allocs_add(&m, UINT64_MAX - 4, 16, KS_CU_ALLOC_DEVICE), -EINVAL);
	/* Out of order, many (the array grows). */
	for (uint64_t i = 200; i-- > 0;)
		assert_int_equal(ks_cu_allocs_add(&m, 0x700000000 + i * 0x10000, 0x1000,
						  KS_CU_ALLOC_DEVICE), 0);
	assert_int_equal(m.n, 200);
	for (size_t i = 1; i < m.n; i++)
		assert_true(m.a[i - 1].base < m.a[i].base);
	a = ks_cu_allocs_find(&m, 0x700000000 + 5 * 0x10000 + 0xfff);
	assert_non_null(a);
	assert_int_equal(a->base, 0x700000000 + 5 * 0x10000);
	assert_null(ks_cu_allocs_find(&m, 0x700000000 + 5 * 0x10000 + 0x1000));
	assert_null(ks_cu_allocs_find(&m, 0x6fffffff0));
	assert_null(ks_cu_allocs_find(&m, 0x700000000 + 300 * 0x10000));
	/* Remove by base only. */
	assert_false(ks_cu_allocs_remove(&m, 0x700000000 + 5 * 0x10000 + 8));
	assert_true(ks_cu_allocs_remove(&m, 0x700000000 + 5 * 0x10000));
	assert_null(ks_cu_allocs_find(&m, 0x700000000 + 5 * 0x10000));
	assert_int_equal(m.n, 199);
	/* A new allocation over three old ones (their frees unseen) replaces
	 * them. */
	assert_int_equal(ks_cu_allocs_add(&m, 0x700000000 + 10 * 0x10000 + 0x800, 0x20000,
					  KS_CU_ALLOC_MANAGED), 0);
	assert_int_equal(m.n, 199 - 3 + 1);
	a = ks_cu_allocs_find(&m, 0x700000000 + 11 * 0x10000);
	assert_non_null(a);
	assert_int_equal(a->kind, KS_CU_ALLOC_MANAGED);
	assert_int_equal(a->size, 0x20000);
	a = ks_cu_allocs_find(&m, 0x700000000 + 10 * 0x10000);
	assert_null(a);                   /* the old one at 10 is gone */
	for (size_t i = 1; i < m.n; i++)
		assert_true(m.a[i - 1].base + m.a[i - 1].size <= m.a[i].base);
	ks_cu_allocs_free(&m);
	assert_int_equal(m.n, 0);
}

/* The lookup over a map, as the backend's is (without the driver). */
static bool lookup(void *ctx, uint64_t addr, uint64_t *b, uint64_t *s, enum ks_cu_alloc_kind *k)
{
	const struct ks_cu_alloc *a = ks_cu_allocs_find(ctx, addr);

	if (!a)
		return false;
	*b = a->base;
	*s = a->size;
	*k = a->kind;
	return true;
}

static void put64(unsigned char *img, size_t off, uint64_t v)
{
	memcpy(img + off, &v, 8);
}

static void test_params(void **state)
{
	struct ks_cu_allocs m = { 0 };
	struct ks_cu_ptr out[8];
	size_t first[8];
	unsigned char img[64] = { 0 };
	long n;

	(void)state;
	assert_int_equal(ks_cu_allocs_add(&m, 0x7f0000000000, 4096, KS_CU_ALLOC_DEVICE), 0);
	assert_int_equal(ks_cu_allocs_add(&m, 0x7f0000100000, 8192, KS_CU_ALLOC_ASYNC), 0);

	/* vadd(const float *a, const float *b, float *c, int n): a and c
	 * point into the first allocation, b into the second, n is a value. */
	{
		const struct ks_cu_param p[] = { { 0, 8 }, { 8, 8 }, { 16, 8 }, { 24, 4 } };

		put64(img, 0, 0x7f0000000000);
		put64(img, 8, 0x7f0000100000 + 4000);
		put64(img, 16, 0x7f0000000000 + 2048);
		memset(img + 24, 0xff, 4);
		n = ks_cu_params_classify(p, 4, img, 28, lookup, &m, out, 8);
		assert_int_equal(n, 3);
		assert_int_equal(out[0].param, 0);
		assert_int_equal(out[1].param, 1);
		assert_int_equal(out[1].base, 0x7f0000100000);
		assert_int_equal(out[1].size, 8192);
		assert_int_equal(out[1].kind, KS_CU_ALLOC_ASYNC);
		assert_int_equal(out[2].param, 2);
		assert_int_equal(out[2].value - out[2].base, 2048);
		assert_int_equal(ks_cu_ptrs_distinct(out, 3, first), 2);
		assert_int_equal(first[0], 0);
		assert_int_equal(first[1], 1);
		/* Fewer slots than pointers: the count is still the total. */
		assert_int_equal(ks_cu_params_classify(p, 4, img, 28, lookup, &m, out, 1), 3);
		assert_int_equal(out[0].param, 0);
		/* A parameter past the image. */
		assert_int_equal(ks_cu_params_classify(p, 4, img, 27, lookup, &m, out, 8), -EINVAL);
	}
	/* structptr.cu's saxpy_soa(struct soa s, float k): a 32-byte
	 * structure {x, y, n, pad, tag} then a float.  x and y are found
	 * inside it; tag (2) and a pointer-sized value outside every
	 * allocation are not. */
	{
		const struct ks_cu_param p[] = { { 0, 32 }, { 32, 4 } };

		memset(img, 0, sizeof(img));
		put64(img, 0, 0x7f0000000000 + 16);
		put64(img, 8, 0x7f0000100000);
		put64(img, 24, 2);
		n = ks_cu_params_classify(p, 2, img, 36, lookup, &m, out, 8);
		assert_int_equal(n, 2);
		assert_int_equal(out[0].param, 0);
		assert_int_equal(out[0].at, 0);
		assert_int_equal(out[1].param, 0);
		assert_int_equal(out[1].at, 8);
		put64(img, 8, 0x7f0000200000);   /* no allocation there */
		assert_int_equal(ks_cu_params_classify(p, 2, img, 36, lookup, &m, out, 8), 1);
	}
	/* Null and small values are values; a 4-byte parameter is never a
	 * pointer; a 16-byte parameter at an offset that is 4 mod 8 has its
	 * one aligned word at +4. */
	{
		const struct ks_cu_param p[] = { { 0, 8 }, { 8, 4 }, { 12, 16 } };

		memset(img, 0, sizeof(img));
		put64(img, 0, 0);
		put64(img, 16, 0x7f0000000000);
		assert_int_equal(ks_cu_params_classify(p, 3, img, 28, lookup, &m, out, 8), 1);
		assert_int_equal(out[0].param, 2);
		assert_int_equal(out[0].at, 4);
		/* The same pointer straddling an unaligned position is not one. */
		memset(img, 0, sizeof(img));
		put64(img, 12, 0x7f0000000000);
		assert_int_equal(ks_cu_params_classify(p, 3, img, 28, lookup, &m, out, 8), 0);
	}
	/* No parameters. */
	assert_int_equal(ks_cu_params_classify(NULL, 0, img, 0, lookup, &m, out, 8), 0);
	ks_cu_allocs_free(&m);
}

static void test_elf(void **state)
{
	char path[] = "/tmp/ks_cuda_elf_XXXXXX";
	int fd;

	(void)state;
	/* This test program: ELF, no device code. */
	assert_int_equal(ks_cu_elf_has_section("/proc/self/exe", ".nv_fatbin"), 0);
	assert_int_equal(ks_cu_elf_has_section("/proc/self/exe", ".text"), 1);
	assert_int_equal(ks_cu_elf_has_section("/nonexistent/x", ".text"), -ENOENT);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\nexit 0\n", 17), 17);
	close(fd);
	assert_int_equal(ks_cu_elf_has_section(path, ".text"), -ENOEXEC);
	unlink(path);
	if (example) {
		/* An nvcc-built program. */
		assert_int_equal(ks_cu_elf_has_section(example, ".nv_fatbin"), 1);
	}
}

/* The order a graph's nodes run in when kscope runs them one by one. */
static void test_graph_order(void **state)
{
	size_t order[8];

	(void)state;
	/* No edges: the driver's order. */
	assert_int_equal(ks_cu_graph_order(3, NULL, NULL, 0, order), 0);
	assert_int_equal(order[0], 0);
	assert_int_equal(order[1], 1);
	assert_int_equal(order[2], 2);
	/* A chain given backwards: 3 -> 2 -> 1 -> 0. */
	{
		size_t from[] = { 3, 2, 1 }, to[] = { 2, 1, 0 };

		assert_int_equal(ks_cu_graph_order(4, from, to, 3, order), 0);
		assert_int_equal(order[0], 3);
		assert_int_equal(order[1], 2);
		assert_int_equal(order[2], 1);
		assert_int_equal(order[3], 0);
	}
	/* A diamond 4 -> {1, 3} -> 0, and 2 alone: ties by index. */
	{
		size_t from[] = { 4, 4, 1, 3 }, to[] = { 3, 1, 0, 0 };

		assert_int_equal(ks_cu_graph_order(5, from, to, 4, order), 0);
		assert_int_equal(order[0], 2);
		assert_int_equal(order[1], 4);
		assert_int_equal(order[2], 1);
		assert_int_equal(order[3], 3);
		assert_int_equal(order[4], 0);
	}
	/* Every edge's ends in order, on a larger graph. */
	{
		size_t from[] = { 7, 6, 5, 7, 0, 2, 1 }, to[] = { 6, 5, 0, 2, 1, 3, 4 };
		size_t pos[8];

		assert_int_equal(ks_cu_graph_order(8, from, to, 7, order), 0);
		for (size_t i = 0; i < 8; i++)
			pos[order[i]] = i;
		for (size_t e = 0; e < 7; e++)
			assert_true(pos[from[e]] < pos[to[e]]);
	}
	/* A cycle, and an edge naming no node. */
	{
		size_t from[] = { 0, 1, 2 }, to[] = { 1, 2, 0 }, bad[] = { 5 };

		assert_int_equal(ks_cu_graph_order(3, from, to, 3, order), -1);
		assert_int_equal(ks_cu_graph_order(3, from, bad, 1, order), -1);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_names),
		cmocka_unit_test(test_filters_on_cuda_names),
		cmocka_unit_test(test_allocs),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_elf),
		cmocka_unit_test(test_graph_order),
	};

	example = argc > 1 ? argv[1] : NULL;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
