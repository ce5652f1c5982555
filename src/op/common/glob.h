/*
 * The prefix glob of kscope's name filters: pat matches the start of s,
 * and '*' in pat stands for any run of characters, including none.
 * Freestanding (no libc), so that libkscope-op.so, the kscope executable
 * and kscope's Valgrind tool (src/memtools/vg) all decide alike.
 */
#ifndef KS_OP_GLOB_H
#define KS_OP_GLOB_H

/* Matches pat[0..patlen) (patlen < 0: up to its NUL) against s. */
static inline int ks_glob_prefix(const char *pat, long patlen, const char *s)
{
	const char *end = patlen < 0 ? 0 : pat + patlen;
	const char *star = 0, *resume = 0;

	for (;;) {
		if (end ? pat == end : *pat == '\0')
			return 1; /* the pattern is a prefix of what is left */
		if (*pat == '*') {
			star = ++pat;
			resume = s;
			continue;
		}
		if (*s != '\0' && *s == *pat) {
			pat++;
			s++;
			continue;
		}
		if (!star || *resume == '\0')
			return 0;
		pat = star;
		s = ++resume;
	}
}

#endif
