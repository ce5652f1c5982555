/*
 * The order kscope op runs a CUDA graph's nodes in, one after another,
 * when it collects kernels from the graph (cuda_graph.c; cuda_logic.h).
 * Kahn's algorithm over the edges, with the ready nodes kept in a binary
 * heap by index: any order the edges allow gives the graph's results,
 * and this one is the same on every launch.
 */
#include <stdlib.h>

#include "cuda_logic.h"

static void heap_push(size_t *h, size_t *len, size_t v)
{
	size_t i = (*len)++;

	while (i > 0 && h[(i - 1) / 2] > v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static size_t heap_pop(size_t *h, size_t *len)
{
	size_t top = h[0], v = h[--*len], i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *len)
			break;
		if (c + 1 < *len && h[c + 1] < h[c])
			c++;
		if (h[c] >= v)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*len)
		h[i] = v;
	return top;
}

int ks_cu_graph_order(size_t n, const size_t *from, const size_t *to, size_t m,
		      size_t *order)
{
	size_t *indeg, *start, *succ, *heap, len = 0, done = 0;
	int rc = -1;

	for (size_t e = 0; e < m; e++)
		if (from[e] >= n || to[e] >= n)
			return -1;
	indeg = calloc(n + 1, sizeof(*indeg));
	start = calloc(n + 2, sizeof(*start));
	succ = malloc((m + 1) * sizeof(*succ));
	heap = malloc((n + 1) * sizeof(*heap));
	if (!indeg || !start || !succ || !heap)
		goto out;
	/* The edges by from-node (start[i] .. start[i + 1] in succ). */
	for (size_t e = 0; e < m; e++) {
		start[from[e] + 2]++;
		indeg[to[e]]++;
	}
	for (size_t i = 2; i < n + 2; i++)
		start[i] += start[i - 1];
	for (size_t e = 0; e < m; e++)
		succ[start[from[e] + 1]++] = to[e];
	for (size_t i = 0; i < n; i++)
		if (!indeg[i])
			heap_push(heap, &len, i);
	while (len) {
		size_t v = heap_pop(heap, &len);

		order[done++] = v;
		for (size_t k = start[v]; k < start[v + 1]; k++)
			if (--indeg[succ[k]] == 0)
				heap_push(heap, &len, succ[k]);
	}
	rc = done == n ? 0 : -1;
out:
	free(indeg);
	free(start);
	free(succ);
	free(heap);
	return rc;
}
