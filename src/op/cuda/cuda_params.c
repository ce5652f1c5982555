/*
 * Which parameters of a CUDA launch point into device memory (cuda_logic.h).
 * The driver says where each parameter lies in the packed image
 * (cuFuncGetParamInfo) but not its type, so kscope looks at values: every
 * aligned 8-byte word that falls inside a live allocation is taken for a
 * pointer.  This finds pointers inside structures passed by value too
 * (examples/cuda/structptr.cu).  A 64-bit integer whose value happens to
 * fall inside an allocation is taken for a pointer as well; the cost is
 * an allocation backed up and restored that did not need to be.
 */
#include <errno.h>
#include <string.h>

#include "cuda_logic.h"

/* Values below this are never device addresses (the driver maps nothing
 * in the first 64 KiB); sparing the lookup keeps integers out of it. */
#define LOWEST_ADDRESS 0x10000u

long ks_cu_params_classify(const struct ks_cu_param *params, unsigned nparams,
			   const unsigned char *image, size_t image_len, ks_cu_lookup_fn lookup,
			   void *ctx, struct ks_cu_ptr *out, size_t max)
{
	long n = 0;

	for (unsigned i = 0; i < nparams; i++) {
		const struct ks_cu_param *p = &params[i];

		if ((size_t)p->offset + p->size > image_len)
			return -EINVAL;
		if (p->size < 8)
			continue;
		for (uint32_t at = (8 - p->offset % 8) % 8; at + 8 <= p->size; at += 8) {
			struct ks_cu_ptr c = { .param = i, .at = at };

			memcpy(&c.value, image + p->offset + at, 8);
			if (c.value < LOWEST_ADDRESS ||
			    !lookup(ctx, c.value, &c.base, &c.size, &c.kind))
				continue;
			if ((size_t)n < max)
				out[n] = c;
			n++;
		}
	}
	return n;
}

size_t ks_cu_ptrs_distinct(const struct ks_cu_ptr *ptrs, size_t n, size_t *first)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j;

		for (j = 0; j < k; j++)
			if (ptrs[first[j]].base == ptrs[i].base)
				break;
		if (j == k)
			first[k++] = i;
	}
	return k;
}
