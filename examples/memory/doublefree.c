/*
 * Defect example for `kscope memcheck`: a block freed in close_session()
 * and freed again in cleanup().  The expected report is one double-free
 * at the marked line, with the first free's stack as the block's
 * free stack; doublefree_clean.c frees once.  Natively glibc detects the
 * second free and aborts; under Valgrind the program survives and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
	int id;
	char user[28];
};

static void close_session(struct session *s)
{
	printf("closing session %d of %s\n", s->id, s->user);
	free(s);
}

static void cleanup(struct session *s)
{
	free(s); /* DEFECT: double-free */
}

int main(void)
{
	struct session *s = malloc(sizeof(*s));

	if (!s)
		return 1;
	s->id = 42;
	strcpy(s->user, "alice");
	close_session(s);
	cleanup(s);
	printf("done\n");
	return 0;
}
