/*
 * False-positive check for `kscope memcheck`: a heap struct with four int
 * fields of which only two are set is copied whole into two other heap
 * structs, by assignment (`*b = *a`) and by memcpy, and only the two set
 * fields are then branched on and printed.  Copying undefined bytes is
 * not an error, so the expected report is empty: a tool that checks
 * definedness at the load rather than at the use reports here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct point {
	int x, y;	/* set */
	int z, w;	/* never set */
};

int main(void)
{
	struct point *a = malloc(sizeof(*a));
	struct point *b = malloc(sizeof(*b));
	struct point *c = malloc(sizeof(*c));

	if (!a || !b || !c)
		return 1;
	a->x = 3;
	a->y = -4;
	*b = *a;
	memcpy(c, a, sizeof(*c));
	if (b->x > 0)
		printf("b.x %d is positive\n", b->x);
	if (c->y < 0)
		printf("c.y %d is negative\n", c->y);
	printf("sum %d\n", b->x + b->y + c->x + c->y);
	free(a);
	free(b);
	free(c);
	return 0;
}
