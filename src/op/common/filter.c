/*
 * Kernel-name filters: '|' alternatives of prefix patterns with '*'
 * wildcards (filter.h).  Matching is iterative with one backtrack point
 * per '*', so it is linear in practice and never recursive.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "glob.h"

struct ks_op_filter {
	size_t n;       /* alternatives */
	char **alt;     /* each NUL-terminated, pointing into text */
	char text[];    /* the pattern with '|' replaced by NUL */
};

static int allowed(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '|' || c == '*';
}

int ks_op_filter_compile(const char *pattern, struct ks_op_filter **out,
			 char *why, size_t size)
{
	size_t len = pattern ? strlen(pattern) : 0, n = 1;
	struct ks_op_filter *f;
	char *p;

	*out = NULL;
	if (len == 0 || len > KS_OP_FILTER_MAX) {
		snprintf(why, size, "it has %zu characters; 1 to %d are accepted", len,
			 KS_OP_FILTER_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)pattern[i];

		if (!allowed(c)) {
			if (c >= 0x20 && c < 0x7f)
				snprintf(why, size, "character '%c' at position %zu is not "
					 "accepted; use letters, digits, '_', '*' and '|'",
					 c, i + 1);
			else
				snprintf(why, size, "byte 0x%02x at position %zu is not "
					 "accepted; use letters, digits, '_', '*' and '|'",
					 c, i + 1);
			return -EINVAL;
		}
		if (c == '|') {
			if (i == 0 || i + 1 == len || pattern[i + 1] == '|') {
				snprintf(why, size, "it has an empty alternative at position "
					 "%zu; write NAME|NAME", i + 1);
				return -EINVAL;
			}
			n++;
		}
	}
	f = malloc(sizeof(*f) + len + 1);
	if (!f)
		return -ENOMEM;
	f->alt = malloc(n * sizeof(*f->alt));
	if (!f->alt) {
		free(f);
		return -ENOMEM;
	}
	memcpy(f->text, pattern, len + 1);
	f->n = 0;
	p = f->text;
	for (;;) {
		char *bar = strchr(p, '|');

		f->alt[f->n++] = p;
		if (!bar)
			break;
		*bar = '\0';
		p = bar + 1;
	}
	*out = f;
	return 0;
}

bool ks_op_filter_match(const struct ks_op_filter *f, const char *name)
{
	if (!f)
		return true;
	for (size_t i = 0; i < f->n; i++)
		if (ks_glob_prefix(f->alt[i], -1, name))
			return true;
	return false;
}

void ks_op_filter_free(struct ks_op_filter *f)
{
	if (!f)
		return;
	free(f->alt);
	free(f);
}
