/*
 * Clean counterpart of uaf.c for `kscope memcheck`: the same buffer made
 * in make_buffer() and released in release(), but read before it is
 * released.  Expected: no report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buffer {
	char name[16];
	int id;
	int len;
};

static struct buffer *make_buffer(int id)
{
	struct buffer *b = malloc(sizeof(*b));

	if (!b)
		exit(1);
	memset(b, 0, sizeof(*b));
	strcpy(b->name, "buffer");
	b->id = id;
	b->len = (int)strlen(b->name);
	return b;
}

static void release(struct buffer *b)
{
	free(b);
}

int main(void)
{
	struct buffer *b = make_buffer(7);
	int id;

	id = b->id;
	release(b);
	printf("buffer id %d\n", id);
	return 0;
}
