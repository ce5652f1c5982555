/*
 * A heap overflow that reaches past the redzone into the allocator's
 * next block (tests/memtools/memcheck_redzone.py, bench/memtools.sh's
 * redzone section).
 *
 *     mt_overflow              the program of the issue: 100 bytes copied
 *                              into a 50-byte block, then freed
 *     mt_overflow OVER SIZE    OVER bytes copied past a SIZE-byte block
 *                              among others of that size, then more
 *                              allocations and frees, so that the
 *                              allocator walks its arena
 *
 * Exits 0 when it gets to its end.  Under Memcheck, an overflow longer
 * than the redzone overwrites the next block's header in Memcheck's own
 * arena, and Memcheck may abort at the next malloc or free.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int issue(void)
{
	char src[100];

	memset(src, 'A', 100);
	char *p = malloc(50);
	memcpy(p, src, 100); /* DEFECT: invalid-write */
	printf("%c\n", p[0]);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	enum { NKEEP = 64 };
	char *keep[NKEEP];
	size_t over, size;
	char *src, *p;

	if (argc == 1)
		return issue();
	if (argc != 3) {
		fprintf(stderr, "usage: mt_overflow [OVER SIZE]\n");
		return 2;
	}
	over = strtoul(argv[1], NULL, 10);
	size = strtoul(argv[2], NULL, 10);
	if (!size || size > (1u << 20) || over > (1u << 20)) {
		fprintf(stderr, "mt_overflow: OVER and SIZE: 1 to 1048576\n");
		return 2;
	}
	src = malloc(size + over);
	if (!src)
		return 1;
	memset(src, 'A', size + over);
	for (int i = 0; i < NKEEP / 4; i++)
		keep[i] = malloc(size);
	p = malloc(size);
	memcpy(p, src, size + over);
	printf("%c\n", p[0]);
	for (int i = NKEEP / 4; i < NKEEP; i++)
		keep[i] = malloc(size * (size_t)(i % 5 + 1));
	for (int i = 0; i < NKEEP; i += 2)
		free(keep[i]);
	for (int i = 0; i < 32; i++)
		free(malloc(size + (size_t)i * 8));
	for (int i = 1; i < NKEEP; i += 2)
		free(keep[i]);
	free(p);
	free(src);
	return 0;
}
