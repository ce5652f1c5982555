/*
 * The source lines `kscope causal` experiments on: every line of the
 * program's own code with its machine-code address ranges, read from the
 * executable's DWARF line table (src/causal/causal_lines.c).  The ranges
 * go to the runtime (a binary file, libkscope-causal.so reads it), the
 * names to the analysis (causal_post.h).
 */
#ifndef KS_CAUSAL_LINES_H
#define KS_CAUSAL_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "causal_post.h"
#include "err.h"

struct ks_causal_lrange {
	uint64_t lo, hi;              /* link-time addresses, [lo, hi) */
	uint32_t line;                /* index into lines */
};

/* Which lines are experimented on. */
struct ks_causal_scope {
	const char *const *lines;     /* --lines: patterns on FILE or FILE:LINE */
	size_t nlines;                /* 0: every file not under /usr/ */
	const char *const *functions; /* --functions: patterns on function names */
	size_t nfunctions;            /* 0: any */
	bool by_function;             /* --granularity function */
};

struct ks_causal_lines {
	struct ks_causal_line *lines; /* id -> file:line (and function) */
	char **files;                 /* owned: what lines[i].file points to */
	char **functions;             /* owned: what lines[i].function points to */
	size_t nlines;
	bool by_function;             /* an id is a function, named by its entry */
	struct ks_causal_lrange *ranges; /* sorted by lo, disjoint */
	size_t nranges;
	size_t skipped_files;         /* files of the line table left out of scope */
};

/* Reads the line table of the ELF file at path, the lines in scope (sc:
 * shell patterns, fnmatch, on a line's FILE or FILE:LINE, by default
 * every file not under /usr/ -- the system's headers and libraries; and
 * on the name of the function holding it), each line with the function
 * holding it; with sc->by_function, one entry per function in scope,
 * named by its entry's file and line.  Errors: no such file, not ELF, no
 * DWARF line table (the program was built without -g), nothing in
 * scope. */
int ks_causal_lines_read(const char *path, const struct ks_causal_scope *sc,
			 struct ks_causal_lines *out, struct ks_err *err);

/* The id of the function called name (exact, as the reports print it);
 * -ENOENT with err naming up to three functions whose names contain it,
 * -EINVAL when the table is not by function. */
int ks_causal_lines_find_function(const struct ks_causal_lines *l, const char *name,
				  uint32_t *id, struct ks_err *err);

/* The id of "FILE:LINE", FILE a path or the end of one ("src/a.c",
 * "a.c"); -ENOENT with err naming the nearest lines that have code, or
 * -EINVAL when FILE matches several files, naming them. */
int ks_causal_lines_find(const struct ks_causal_lines *l, const char *spec, uint32_t *id,
			 struct ks_err *err);

/* Writes the ranges in the runtime's format (lines.bin, docs/formats.md;
 * causal_rt.c: load_ranges).  0, or -EIO when out fails. */
int ks_causal_lines_write_ranges(const struct ks_causal_lines *l, FILE *out);

/* Writes the line table as text (lines.tsv): a header, then per line id
 * "ID<TAB>FILE<TAB>LINE<TAB>FUNCTION" (FUNCTION empty when unknown), what
 * the raw files' line ids stand for.  A control character in a path or
 * name is written as '?'.  0, or -EIO. */
int ks_causal_lines_write_table(const struct ks_causal_lines *l, FILE *out);

/* Reads a line table written by ks_causal_lines_write_table (a run's
 * lines.tsv) into l: its lines, no ranges.  -EINVAL with err naming the
 * file and line when it is not such a table; -errno when unreadable. */
int ks_causal_lines_read_table(const char *path, struct ks_causal_lines *l,
			       struct ks_err *err);

void ks_causal_lines_free(struct ks_causal_lines *l);

#endif
