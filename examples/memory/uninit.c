/*
 * Defect example for `kscope memcheck`: a heap array of 10 ints of which
 * only a[0..4] are written, and a branch on a[5].  The expected report is
 * one uninit-cond at the marked line (the conditional jump, not
 * the load: loading and copying undefined bytes is not an error).
 * uninit_clean.c initializes the whole array.  What it prints depends on
 * the undefined value.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int *a = malloc(10 * sizeof(int));

	if (!a)
		return 1;
	for (int i = 0; i < 5; i++)
		a[i] = i + 1;
	if (a[5] > 0) /* DEFECT: uninit-cond */
		printf("a[5] is positive\n");
	else
		printf("a[5] is not positive\n");
	printf("a[4] %d\n", a[4]);
	free(a);
	return 0;
}
