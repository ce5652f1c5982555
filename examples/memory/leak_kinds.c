/*
 * Defect example for `kscope memcheck`: the kinds of leaks.  A tree whose
 * root is lost (the root definitely lost, its two children indirectly
 * lost), a block only reachable through a pointer into its interior
 * (possibly lost), a block still reachable from a global, and a block
 * whose only pointer was left in a dead stack slot of a function that
 * returned (definitely lost: a dead slot is not a root).  Run with
 * --show-leak-kinds all to see every kind.
 */
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *left, *right;
	char payload[16];
};

static char *kept;          /* still reachable at exit */
static char *interior;      /* points 8 bytes into its block */

static struct node *make_node(void)
{
	struct node *n = calloc(1, sizeof(*n)); /* DEFECT: leak-indirect */
	return n;
}

static void lose_tree(void)
{
	struct node *root = malloc(sizeof(*root)); /* DEFECT: leak-definite tree */

	root->left = make_node();
	root->right = make_node();
	memset(root->payload, 1, sizeof(root->payload));
	/* root goes out of scope: the tree is lost */
}

/* The only pointer is a local of this frame; after it returns, the
 * slot is dead (and overwritten below by another call). */
static __attribute__((noinline)) void dead_slot(void)
{
	volatile char *p = malloc(48); /* DEFECT: leak-definite deadslot */
	p[0] = 1;
}

static __attribute__((noinline)) void scrub_stack(void)
{
	volatile char junk[256];

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = 0;
}

int main(void)
{
	lose_tree();
	dead_slot();
	scrub_stack();
	kept = malloc(64); /* DEFECT: leak-reachable */
	interior = (char *)malloc(32) + 8; /* DEFECT: leak-possible */
	return 0;
}
