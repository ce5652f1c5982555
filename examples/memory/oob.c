/*
 * Defect example for `kscope memcheck`: a heap array of 10 ints is filled
 * and then read one element past its end (a[10]: a 4-byte read just after
 * a 40-byte block), and the value read is printed.  The expected report is
 * one invalid-read at the marked line; oob_clean.c is the same
 * program without the bug.  Built with -O0 and without sanitizers so the
 * access really happens and only Valgrind sees it.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int *a = malloc(10 * sizeof(int));
	int sum = 0, past;

	if (!a)
		return 1;
	for (int i = 0; i < 10; i++)
		a[i] = i * i;
	for (int i = 0; i < 10; i++)
		sum += a[i];
	past = a[10]; /* DEFECT: invalid-read */
	/* The value is whatever lies after the block: not deterministic. */
	printf("sum %d, a[10] %d\n", sum, past);
	free(a);
	return 0;
}
