/*
 * Defect example for `kscope memcheck`: free() of a pointer 4 bytes into
 * a heap block (p + 1 for an int *p) rather than of the block's start.
 * The expected report is one invalid-free at the marked line; the
 * block itself is then freed properly, so there is no leak.  Natively
 * glibc aborts at the bad free; under Valgrind the program exits 0.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int *p = malloc(8 * sizeof(int));

	if (!p)
		return 1;
	for (int i = 0; i < 8; i++)
		p[i] = i;
	free(p + 1); /* DEFECT: invalid-free */
	printf("p[7] %d\n", p[7]);
	free(p);
	return 0;
}
