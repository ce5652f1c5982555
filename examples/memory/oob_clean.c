/*
 * Clean counterpart of oob.c for `kscope memcheck`: the same heap array
 * of 10 ints, filled and summed, with the last element read at a[9]
 * instead of one past the end.  Expected: no report.
 */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int *a = malloc(10 * sizeof(int));
	int sum = 0, last;

	if (!a)
		return 1;
	for (int i = 0; i < 10; i++)
		a[i] = i * i;
	for (int i = 0; i < 10; i++)
		sum += a[i];
	last = a[9];
	printf("sum %d, a[9] %d\n", sum, last);
	free(a);
	return 0;
}
