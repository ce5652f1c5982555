/*
 * The map of the program's device allocations for kscope op's CUDA
 * backend (cuda_logic.h): a sorted array searched by bisection.  A
 * program holds at most some thousands of allocations at once (PyTorch's
 * caching allocator keeps few, large ones), and lookups (one per pointer
 * word of a collected launch) far outnumber changes, so a sorted array
 * beats a tree here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_logic.h"

/* The index of the first allocation whose base is > addr. */
static size_t upper(const struct ks_cu_allocs *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->a[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ks_cu_allocs_add(struct ks_cu_allocs *m, uint64_t base, uint64_t size,
		     enum ks_cu_alloc_kind kind)
{
	size_t i, j;

	if (size == 0 || base + size < base)
		return -EINVAL;
	/* [i, j): the allocations overlapping the new one. */
	i = upper(m, base);
	if (i > 0 && m->a[i - 1].base + m->a[i - 1].size > base)
		i--;
	for (j = i; j < m->n && m->a[j].base < base + size; j++)
		;
	if (j == i && m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct ks_cu_alloc *a = realloc(m->a, cap * sizeof(*a));

		if (!a)
			return -ENOMEM;
		m->a = a;
		m->cap = cap;
	}
	if (j == i)
		memmove(m->a + i + 1, m->a + i, (m->n - i) * sizeof(*m->a));
	else {
		memmove(m->a + i + 1, m->a + j, (m->n - j) * sizeof(*m->a));
		m->n -= j - i - 1;
		m->n--;
	}
	m->a[i] = (struct ks_cu_alloc){ base, size, kind };
	m->n++;
	return 0;
}

bool ks_cu_allocs_remove(struct ks_cu_allocs *m, uint64_t base)
{
	size_t i = upper(m, base);

	if (i == 0 || m->a[i - 1].base != base)
		return false;
	memmove(m->a + i - 1, m->a + i, (m->n - i) * sizeof(*m->a));
	m->n--;
	return true;
}

const struct ks_cu_alloc *ks_cu_allocs_find(const struct ks_cu_allocs *m, uint64_t addr)
{
	size_t i = upper(m, addr);

	if (i == 0 || addr - m->a[i - 1].base >= m->a[i - 1].size)
		return NULL;
	return &m->a[i - 1];
}

void ks_cu_allocs_free(struct ks_cu_allocs *m)
{
	free(m->a);
	memset(m, 0, sizeof(*m));
}
