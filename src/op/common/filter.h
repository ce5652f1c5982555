/*
 * Kernel-name filters of kscope op (--kernel-name, --mstx-include).
 *
 * A filter is one or more alternatives separated by '|'.  Each alternative
 * is matched against the start of a name (a prefix match, as msprof op
 * does), and '*' in it stands for any run of characters, including none:
 * "mm" matches "mm_naive" and "mm_tiled", "*add" matches every name that
 * contains "add", "vadd|mm_t*d" matches "vadd" and "mm_tiled".  Allowed
 * characters: letters, digits, '_', '|' and '*'; at most
 * KS_OP_FILTER_MAX characters; no empty alternative.
 *
 * Used by the kscope executable (to check the option) and compiled into
 * libkscope-op.so (to decide per launch), so it calls only libc.
 */
#ifndef KS_OP_FILTER_H
#define KS_OP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#define KS_OP_FILTER_MAX 1024

struct ks_op_filter;

/* Compiles pattern.  Returns 0, or -EINVAL with why (size bytes) saying
 * what is wrong and what is accepted, or -ENOMEM. */
int ks_op_filter_compile(const char *pattern, struct ks_op_filter **out,
			 char *why, size_t size);
/* True when name matches one alternative; a NULL filter matches all. */
bool ks_op_filter_match(const struct ks_op_filter *f, const char *name);
void ks_op_filter_free(struct ks_op_filter *f);

#endif
