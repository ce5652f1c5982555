/*
 * Clean counterpart of doublefree.c for `kscope memcheck`: the block is
 * freed once, in close_session(), and cleanup() sees the null pointer the
 * caller left behind.  Expected: no report.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct session {
	int id;
	char user[28];
};

static void close_session(struct session **s)
{
	printf("closing session %d of %s\n", (*s)->id, (*s)->user);
	free(*s);
	*s = NULL;
}

static void cleanup(struct session *s)
{
	free(s);
}

int main(void)
{
	struct session *s = malloc(sizeof(*s));

	if (!s)
		return 1;
	s->id = 42;
	strcpy(s->user, "alice");
	close_session(&s);
	cleanup(s);
	printf("done\n");
	return 0;
}
