/*
 * Defect example for `kscope memcheck`: a custom allocator that carves
 * blocks out of one static arena and tells Memcheck about them with the
 * client requests VALGRIND_MALLOCLIKE_BLOCK and VALGRIND_FREELIKE_BLOCK
 * (valgrind/valgrind.h; they cost a few instructions without Valgrind).
 * A block is read after it was released to the allocator, and another
 * one is never released.  The expected reports are one use-after-free
 * and one leak-definite, at the marked lines (the leak where the block
 * was allocated: the client request in pool_get).
 */
#include <stddef.h>
#include <stdio.h>

#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>

static char arena[4096] __attribute__((aligned(16)));
static size_t used;

static __attribute__((noinline)) void *pool_get(size_t size)
{
	void *p = arena + used;

	used += (size + 15) & ~(size_t)15;
	/* A leaked block is located where it was allocated: here. */
	VALGRIND_MALLOCLIKE_BLOCK(p, size, 0, 0); /* DEFECT: leak-definite */
	return p;
}

static __attribute__((noinline)) void pool_put(void *p)
{
	VALGRIND_FREELIKE_BLOCK(p, 0);
}

/* Takes a block and drops it: the allocator's leak. */
static __attribute__((noinline)) void forget_one(void)
{
	char *p = pool_get(64); /* leaked: see pool_get */

	p[0] = 1;
}

int main(void)
{
	/* The arena is static data: make it unaddressable until handed out. */
	VALGRIND_MAKE_MEM_NOACCESS(arena, sizeof(arena));
	int *a = pool_get(sizeof(int) * 4);
	int v;

	a[0] = 42;
	pool_put(a);
	v = a[0]; /* DEFECT: use-after-free */
	forget_one();
	printf("%d\n", v);
	return 0;
}
