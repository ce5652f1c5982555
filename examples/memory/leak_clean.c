/*
 * Clean counterpart of leak.c for `kscope memcheck`: make_tables()
 * allocates and uses the same three blocks and frees each one.
 * Expected: no report and no leak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[3] = {100, 200, 300};

static int make_tables(void)
{
	int check = 0;

	for (int i = 0; i < 3; i++) {
		unsigned char *t = malloc(sizes[i]);

		if (!t)
			exit(1);
		memset(t, i + 1, sizes[i]);
		check += t[sizes[i] - 1] * (int)sizes[i];
		free(t);
	}
	return check;
}

int main(void)
{
	int check = make_tables();

	printf("check %d\n", check);
	return 0;
}
