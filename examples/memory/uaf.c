/*
 * Defect example for `kscope memcheck`: a buffer allocated in
 * make_buffer(), freed in release(), and then read in main(), so the
 * report has three different stacks (the read, the allocation, the free).
 * The expected report is one use-after-free (a 4-byte read) at the
 * marked line; uaf_clean.c reads before releasing.  The field read lies
 * 16 bytes into the block, past what glibc's allocator overwrites in a
 * freed chunk, so the printed value is the same natively and under
 * Valgrind.
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

	release(b);
	id = b->id; /* DEFECT: use-after-free */
	printf("buffer id %d\n", id);
	return 0;
}
