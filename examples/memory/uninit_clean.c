/*
 * Clean counterpart of uninit.c for `kscope memcheck`: the same heap
 * array and branch on a[5], with all 10 elements written first.
 * Expected: no report.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int *a = malloc(10 * sizeof(int));

	if (!a)
		return 1;
	for (int i = 0; i < 10; i++)
		a[i] = i + 1;
	if (a[5] > 0)
		printf("a[5] is positive\n");
	else
		printf("a[5] is not positive\n");
	printf("a[4] %d\n", a[4]);
	free(a);
	return 0;
}
