/*
 * The program's source lines and their address ranges, from the DWARF
 * line table of its executable (elfutils' libdw).  Each row of a line
 * sequence covers the addresses up to the next row's; rows of the same
 * file and line become one line id, whatever the compilation unit, and
 * adjacent ranges of one line are merged.  The runtime looks a sample's
 * address up in the sorted ranges with a binary search.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "causal_lines.h"

/* A row before ids are given. */
struct row {
	uint64_t lo, hi;
	char *file;                   /* owned by the file table */
	int line;
};

struct rows {
	struct row *v;
	size_t n, cap;
	char **files;                 /* distinct file names, owned */
	size_t nfiles, capfiles;
};

static int grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* The file table's copy of name (joined to dir when relative). */
static char *file_intern(struct rows *r, const char *dir, const char *name)
{
	char *full;

	if (name[0] != '/' && dir && *dir) {
		if (asprintf(&full, "%s/%s", dir, name) < 0)
			return NULL;
	} else {
		full = strdup(name);
		if (!full)
			return NULL;
	}
	/* Files repeat row after row: the last one is the likely match. */
	for (size_t i = r->nfiles; i-- > 0 && i + 8 >= r->nfiles;)
		if (strcmp(r->files[i], full) == 0) {
			free(full);
			return r->files[i];
		}
	for (size_t i = 0; i < r->nfiles; i++)
		if (strcmp(r->files[i], full) == 0) {
			free(full);
			return r->files[i];
		}
	if (grow((void **)&r->files, &r->capfiles, r->nfiles + 1, sizeof(*r->files))) {
		free(full);
		return NULL;
	}
	r->files[r->nfiles++] = full;
	return full;
}

static bool in_scope(const char *file, const char *const *scope, size_t nscope)
{
	if (nscope == 0)
		return strncmp(file, "/usr/", 5) != 0;
	for (size_t i = 0; i < nscope; i++)
		if (fnmatch(scope[i], file, 0) == 0)
			return true;
	return false;
}

/* The rows of one compilation unit's line table. */
static int cu_rows(Dwarf_Die *cu, struct rows *r, bool *any)
{
	Dwarf_Attribute attr;
	const char *dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
	Dwarf_Lines *lines;
	size_t n;

	if (dwarf_getsrclines(cu, &lines, &n) != 0)
		return 0;
	*any = true;
	for (size_t i = 0; i + 1 < n; i++) {
		Dwarf_Line *a = dwarf_onesrcline(lines, i), *b = dwarf_onesrcline(lines, i + 1);
		Dwarf_Addr lo, hi;
		bool end;
		int line;
		const char *src;
		char *file;

		if (!a || !b || dwarf_lineendsequence(a, &end) != 0 || end ||
		    dwarf_lineaddr(a, &lo) != 0 || dwarf_lineaddr(b, &hi) != 0 || hi <= lo ||
		    dwarf_lineno(a, &line) != 0 || line <= 0)
			continue;
		src = dwarf_linesrc(a, NULL, NULL);
		if (!src)
			continue;
		file = file_intern(r, dir, src);
		if (!file || grow((void **)&r->v, &r->cap, r->n + 1, sizeof(*r->v)))
			return -ENOMEM;
		r->v[r->n++] = (struct row){ lo, hi, file, line };
	}
	return 0;
}

static int cmp_row_addr(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int cmp_row_line(const void *a, const void *b)
{
	const struct row *const *x = a, *const *y = b;
	int c = strcmp((*x)->file, (*y)->file);

	return c ? c : ((*x)->line > (*y)->line) - ((*x)->line < (*y)->line);
}

/* Gives ids to the distinct file:line pairs of the rows in scope (in file
 * and line order, so ids read like the source) and makes the ranges. */
static int build(struct rows *r, const char *const *scope, size_t nscope,
		 struct ks_causal_lines *out)
{
	struct row **by_line = NULL;
	uint32_t *ids = NULL;
	size_t n = 0;
	int rc = -ENOMEM;

	qsort(r->v, r->n, sizeof(*r->v), cmp_row_addr);
	by_line = malloc((r->n ? r->n : 1) * sizeof(*by_line));
	ids = malloc((r->n ? r->n : 1) * sizeof(*ids));
	if (!by_line || !ids)
		goto out;
	for (size_t i = 0; i < r->n; i++)
		if (in_scope(r->v[i].file, scope, nscope))
			by_line[n++] = &r->v[i];
	for (size_t i = 0; i < r->nfiles; i++)
		if (!in_scope(r->files[i], scope, nscope))
			out->skipped_files++;
	if (n == 0) {
		rc = -ENOENT;
		goto out;
	}
	qsort(by_line, n, sizeof(*by_line), cmp_row_line);
	out->lines = calloc(n, sizeof(*out->lines));
	out->files = calloc(n, sizeof(*out->files));
	out->ranges = calloc(n, sizeof(*out->ranges));
	if (!out->lines || !out->files || !out->ranges)
		goto out;
	for (size_t i = 0; i < n; i++) {
		struct row *w = by_line[i];

		if (i == 0 || cmp_row_line(&by_line[i - 1], &by_line[i]) != 0) {
			char *f = strdup(w->file);

			if (!f)
				goto out;
			out->files[out->nlines] = f;
			out->lines[out->nlines].file = f;
			out->lines[out->nlines].line = w->line;
			out->nlines++;
		}
		ids[w - r->v] = (uint32_t)(out->nlines - 1);
	}
	/* The ranges in address order; a row overlapping the one before
	 * (code listed by two units) keeps only what is new. */
	for (size_t i = 0; i < r->n; i++) {
		struct row *w = &r->v[i];
		struct ks_causal_lrange *last = out->nranges ? &out->ranges[out->nranges - 1] : NULL;
		uint64_t lo = w->lo;

		if (!in_scope(w->file, scope, nscope))
			continue;
		if (last && lo < last->hi)
			lo = last->hi;
		if (lo >= w->hi)
			continue;
		if (last && last->hi == lo && last->line == ids[i]) {
			last->hi = w->hi;
			continue;
		}
		out->ranges[out->nranges++] = (struct ks_causal_lrange){ lo, w->hi, ids[i] };
	}
	rc = 0;
out:
	free(by_line);
	free(ids);
	return rc;
}

int ks_causal_lines_read(const char *path, const char *const *scope, size_t nscope,
			 struct ks_causal_lines *out, struct ks_err *err)
{
	struct rows r = { 0 };
	Dwarf *dw = NULL;
	Dwarf_Off off = 0, next;
	size_t hsize;
	bool any = false;
	char magic[4];
	int fd, rc = 0;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, "\177ELF", 4) != 0) {
		rc = ks_err_set(err, -ENOEXEC, "%s is not an ELF executable (a script?): kscope "
				"causal experiments on the lines of the program's own executable, "
				"built with -g; give that after --", path);
		goto out;
	}
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		rc = ks_err_set(err, -ENOENT, "%s has no debugging information (DWARF); "
				"build the program with -g", path);
		goto out;
	}
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;

		if (dwarf_offdie(dw, off + hsize, &cu) && (rc = cu_rows(&cu, &r, &any)) != 0) {
			rc = ks_err_set(err, rc, "out of memory reading the line table of %s",
					path);
			goto out;
		}
		off = next;
	}
	if (!any) {
		rc = ks_err_set(err, -ENOENT, "%s has no line table; build the program with -g",
				path);
		goto out;
	}
	rc = build(&r, scope, nscope, out);
	if (rc == -ENOENT)
		ks_err_set(err, rc, "no line of %s is in scope (%zu source file%s, %s)",
			   path, r.nfiles, r.nfiles == 1 ? "" : "s",
			   nscope ? "none matches --source-scope" : "all under /usr/");
	else if (rc)
		ks_err_set(err, rc, "out of memory reading the line table of %s", path);
out:
	if (rc)
		ks_causal_lines_free(out);
	for (size_t i = 0; i < r.nfiles; i++)
		free(r.files[i]);
	free(r.files);
	free(r.v);
	if (dw)
		dwarf_end(dw);
	close(fd);
	return rc;
}

/* Does file name the path `file` (the whole path, or its end after a
 * slash)? */
static bool file_matches(const char *path, const char *file, size_t len)
{
	size_t n = strlen(path);

	if (n == len)
		return strncmp(path, file, len) == 0;
	return n > len && path[n - len - 1] == '/' && strncmp(path + n - len, file, len) == 0;
}

int ks_causal_lines_find(const struct ks_causal_lines *l, const char *spec, uint32_t *id,
			 struct ks_err *err)
{
	const char *colon = strrchr(spec, ':');
	const char *file = NULL, *other = NULL;
	char *end;
	long line;
	size_t len;
	int below = 0, above = 0;

	if (!colon || colon == spec || !colon[1])
		return ks_err_set(err, -EINVAL, "'%s' is not FILE:LINE (e.g. main.c:42)", spec);
	errno = 0;
	line = strtol(colon + 1, &end, 10);
	if (errno || *end || line <= 0 || line > INT32_MAX)
		return ks_err_set(err, -EINVAL, "'%s' is not FILE:LINE: '%s' is not a line "
				  "number", spec, colon + 1);
	len = (size_t)(colon - spec);
	for (size_t i = 0; i < l->nlines; i++) {
		const struct ks_causal_line *x = &l->lines[i];

		if (!file_matches(x->file, spec, len))
			continue;
		if (!file)
			file = x->file;
		else if (strcmp(file, x->file) != 0)
			other = x->file;
		if (x->line == line && !other) {
			*id = (uint32_t)i;
			continue;
		}
		if (x->line < line && x->line > below)
			below = x->line;
		if (x->line > line && (!above || x->line < above))
			above = x->line;
	}
	if (other)
		return ks_err_set(err, -EINVAL, "'%.*s' names more than one source file (%s, "
				  "%s): give more of the path", (int)len, spec, file, other);
	if (!file)
		return ks_err_set(err, -ENOENT, "no source file of the program matches '%.*s'",
				  (int)len, spec);
	for (size_t i = 0; i < l->nlines; i++)
		if (l->lines[i].line == line && strcmp(l->lines[i].file, file) == 0)
			return 0;
	if (below && above)
		return ks_err_set(err, -ENOENT, "%s:%ld has no code; the nearest lines with "
				  "code are %d and %d", file, line, below, above);
	return ks_err_set(err, -ENOENT, "%s:%ld has no code; the nearest line with code "
			  "is %d", file, line, below ? below : above);
}

int ks_causal_lines_write_ranges(const struct ks_causal_lines *l, FILE *out)
{
	uint32_t head[4] = { 0, 1, (uint32_t)l->nlines, (uint32_t)l->nranges };
	bool ok;

	memcpy(head, "KSCL", 4);
	ok = fwrite(head, sizeof(head), 1, out) == 1;
	for (size_t i = 0; ok && i < l->nranges; i++) {
		struct {
			uint64_t lo, hi;
			uint32_t line, pad;
		} e = { l->ranges[i].lo, l->ranges[i].hi, l->ranges[i].line, 0 };

		ok = fwrite(&e, sizeof(e), 1, out) == 1;
	}
	return ok && fflush(out) == 0 ? 0 : -EIO;
}

int ks_causal_lines_write_table(const struct ks_causal_lines *l, FILE *out)
{
	bool ok = fputs("id\tfile\tline\n", out) >= 0;

	for (size_t i = 0; ok && i < l->nlines; i++) {
		ok = fprintf(out, "%zu\t", i) > 0;
		for (const char *c = l->lines[i].file; ok && *c; c++)
			ok = fputc((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c, out) != EOF;
		ok = ok && fprintf(out, "\t%d\n", l->lines[i].line) > 0;
	}
	return ok && fflush(out) == 0 ? 0 : -EIO;
}

int ks_causal_lines_read_table(const char *path, struct ks_causal_lines *l,
			       struct ks_err *err)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t cap = 0, n = 0, capl = 0, capf = 0;
	ssize_t len;
	int rc = 0;

	memset(l, 0, sizeof(*l));
	if (!f)
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	for (size_t no = 1; (len = getline(&text, &cap, f)) >= 0; no++) {
		char *tab1, *tab2, *end;
		unsigned long id;
		long line;

		if (len && text[len - 1] == '\n')
			text[--len] = '\0';
		if (no == 1) {
			if (strcmp(text, "id\tfile\tline") != 0) {
				rc = ks_err_set(err, -EINVAL, "%s:1: not a kscope causal line "
						"table (no 'id file line' header)", path);
				break;
			}
			continue;
		}
		tab1 = strchr(text, '\t');
		tab2 = tab1 ? strrchr(tab1 + 1, '\t') : NULL;
		if (!tab1 || !tab2) {
			rc = ks_err_set(err, -EINVAL, "%s:%zu: not ID<TAB>FILE<TAB>LINE", path, no);
			break;
		}
		*tab1 = *tab2 = '\0';
		errno = 0;
		id = strtoul(text, &end, 10);
		if (errno || *end || id != n) {
			rc = ks_err_set(err, -EINVAL, "%s:%zu: the id is '%s', expected %zu", path,
					no, text, n);
			break;
		}
		line = strtol(tab2 + 1, &end, 10);
		if (errno || *end || line <= 0 || line > INT32_MAX) {
			rc = ks_err_set(err, -EINVAL, "%s:%zu: '%s' is not a line number", path,
					no, tab2 + 1);
			break;
		}
		if (grow((void **)&l->lines, &capl, n + 1, sizeof(*l->lines)) ||
		    grow((void **)&l->files, &capf, n + 1, sizeof(*l->files)) ||
		    !(l->files[n] = strdup(tab1 + 1))) {
			rc = ks_err_set(err, -ENOMEM, "out of memory reading %s", path);
			break;
		}
		l->lines[n].file = l->files[n];
		l->lines[n].line = (int)line;
		l->nlines = ++n;
	}
	free(text);
	fclose(f);
	if (!rc && n == 0)
		rc = ks_err_set(err, -EINVAL, "%s has no lines", path);
	if (rc)
		ks_causal_lines_free(l);
	return rc;
}

void ks_causal_lines_free(struct ks_causal_lines *l)
{
	for (size_t i = 0; l->files && i < l->nlines; i++)
		free(l->files[i]);
	free(l->files);
	free(l->lines);
	free(l->ranges);
	memset(l, 0, sizeof(*l));
}
