/*
 * Defect example for `kscope memcheck`: make_tables() allocates three
 * blocks of 100, 200 and 300 bytes from one line, uses them and drops the
 * pointers, and the program exits normally.  The expected report is one
 * leak-definite record of 600 bytes in 3 blocks whose allocation stack
 * ends at the marked line; leak_clean.c frees the blocks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[3] = {100, 200, 300};

static int make_tables(void)
{
	int check = 0;

	for (int i = 0; i < 3; i++) {
		unsigned char *t = malloc(sizes[i]); /* DEFECT: leak-definite */

		if (!t)
			exit(1);
		memset(t, i + 1, sizes[i]);
		check += t[sizes[i] - 1] * (int)sizes[i];
		/* t goes out of scope here: the last pointer to the block. */
	}
	return check;
}

int main(void)
{
	int check = make_tables();

	printf("check %d\n", check);
	return 0;
}
