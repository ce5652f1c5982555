/*
 * The program's source lines and their address ranges, from the DWARF
 * line table of its executable (elfutils' libdw).  Each row of a line
 * sequence covers the addresses up to the next row's; rows of the same
 * file and line become one line id, whatever the compilation unit, and
 * adjacent ranges of one line are merged.  The runtime looks a sample's
 * address up in the sorted ranges with a binary search.
 *
 * Each row also gets the function whose code holds it, from the ELF
 * symbol table (its FUNC symbols with a size; C++ names demangled): for
 * --functions, and for --granularity function, where every row of a
 * function becomes that function's id, named by the row at its entry.
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
#include <gelf.h>

#include "causal_lines.h"
#include "dwsym.h"

/* A row before ids are given. */
struct row {
	uint64_t lo, hi;
	char *file;                   /* owned by the file table */
	int line;
	const struct func *func;      /* the function holding it, or NULL */
};

/* A function of the symbol table. */
struct func {
	uint64_t lo, hi;
	char *name;                   /* demangled, owned */
};

struct rows {
	struct row *v;
	size_t n, cap;
	char **files;                 /* distinct file names, owned */
	size_t nfiles, capfiles;
	struct func *funcs;           /* sorted by lo, disjoint */
	size_t nfuncs, capfuncs;
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

/* Is the row in scope: its file (or FILE:LINE) matches a --lines
 * pattern, by default any file not under /usr/; and, with --functions,
 * its function's name matches one of those. */
static bool in_scope(const struct row *w, const struct ks_causal_scope *sc)
{
	bool ok = sc->nlines == 0 && strncmp(w->file, "/usr/", 5) != 0;
	char at[PATH_MAX + 16];

	if (sc->nlines) {
		snprintf(at, sizeof(at), "%s:%d", w->file, w->line);
		for (size_t i = 0; i < sc->nlines && !ok; i++)
			ok = fnmatch(sc->lines[i], w->file, 0) == 0 ||
			     fnmatch(sc->lines[i], at, 0) == 0;
	}
	if (!ok || sc->nfunctions == 0)
		return ok;
	for (size_t i = 0; i < sc->nfunctions; i++)
		if (w->func && fnmatch(sc->functions[i], w->func->name, 0) == 0)
			return true;
	return false;
}

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The executable's functions (FUNC symbols with a size, .symtab, else
 * .dynsym), sorted, the later of two at one address dropped. */
static int read_funcs(Elf *elf, struct rows *r)
{
	Elf_Scn *scn = NULL;
	int want = SHT_SYMTAB;

	for (int pass = 0; pass < 2 && r->nfuncs == 0; pass++, want = SHT_DYNSYM) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *data;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (unsigned)want ||
			    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
				continue;
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *name;
				char *clean;

				if (!gelf_getsym(data, (int)i, &sym) ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
				    sym.st_shndx == SHN_UNDEF ||
				    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) || !*name)
					continue;
				clean = ks_dwsym_name(name);
				if (!clean || grow((void **)&r->funcs, &r->capfuncs, r->nfuncs + 1,
						   sizeof(*r->funcs))) {
					free(clean);
					return -ENOMEM;
				}
				r->funcs[r->nfuncs++] = (struct func){ sym.st_value,
								       sym.st_value + sym.st_size,
								       clean };
			}
		}
	}
	qsort(r->funcs, r->nfuncs, sizeof(*r->funcs), cmp_func);
	{
		size_t k = 0;

		for (size_t i = 0; i < r->nfuncs; i++) {
			if (k && r->funcs[i].lo < r->funcs[k - 1].hi) {
				free(r->funcs[i].name);
				continue;
			}
			r->funcs[k++] = r->funcs[i];
		}
		r->nfuncs = k;
	}
	return 0;
}

static const struct func *func_of(const struct rows *r, uint64_t addr)
{
	size_t lo = 0, hi = r->nfuncs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < r->funcs[mid].lo)
			hi = mid;
		else if (addr >= r->funcs[mid].hi)
			lo = mid + 1;
		else
			return &r->funcs[mid];
	}
	return NULL;
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
		r->v[r->n++] = (struct row){ lo, hi, file, line, NULL };
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

/* By function: the function's entry first (the row that names it). */
static int cmp_row_func(const void *a, const void *b)
{
	const struct row *const *x = a, *const *y = b;

	if ((*x)->func != (*y)->func)
		return (*x)->func < (*y)->func ? -1 : 1;
	return (*x)->lo < (*y)->lo ? -1 : (*x)->lo > (*y)->lo;
}

/* Names by_line[i] the id of a new entry of out: its row's file, line
 * and function. */
static int entry_add(struct ks_causal_lines *out, const struct row *w)
{
	char *f = strdup(w->file), *fn = w->func ? strdup(w->func->name) : NULL;

	if (!f || (w->func && !fn)) {
		free(f);
		free(fn);
		return -ENOMEM;
	}
	out->files[out->nlines] = f;
	out->functions[out->nlines] = fn;
	out->lines[out->nlines] = (struct ks_causal_line){ f, w->line, fn };
	out->nlines++;
	return 0;
}

/* Gives ids to the distinct file:line pairs of the rows in scope (in file
 * and line order, so ids read like the source), or to their functions
 * (by_function: in address order), and makes the ranges. */
static int build(struct rows *r, const struct ks_causal_scope *sc, struct ks_causal_lines *out)
{
	struct row **by_id = NULL;
	uint32_t *ids = NULL;
	bool *keep = NULL;
	size_t n = 0;
	int rc = -ENOMEM;

	qsort(r->v, r->n, sizeof(*r->v), cmp_row_addr);
	by_id = malloc((r->n ? r->n : 1) * sizeof(*by_id));
	ids = malloc((r->n ? r->n : 1) * sizeof(*ids));
	keep = calloc(r->n ? r->n : 1, sizeof(*keep));
	if (!by_id || !ids || !keep)
		goto out;
	for (size_t i = 0; i < r->n; i++) {
		r->v[i].func = func_of(r, r->v[i].lo);
		keep[i] = in_scope(&r->v[i], sc) && (!sc->by_function || r->v[i].func);
		if (keep[i])
			by_id[n++] = &r->v[i];
	}
	if (n == 0) {
		rc = -ENOENT;
		goto out;
	}
	qsort(by_id, n, sizeof(*by_id), sc->by_function ? cmp_row_func : cmp_row_line);
	out->lines = calloc(n, sizeof(*out->lines));
	out->files = calloc(n, sizeof(*out->files));
	out->functions = calloc(n, sizeof(*out->functions));
	out->ranges = calloc(n, sizeof(*out->ranges));
	if (!out->lines || !out->files || !out->functions || !out->ranges)
		goto out;
	out->by_function = sc->by_function;
	for (size_t i = 0; i < n; i++) {
		struct row *w = by_id[i];
		bool fresh = i == 0 || (sc->by_function ? by_id[i - 1]->func != w->func
				       : cmp_row_line(&by_id[i - 1], &by_id[i]) != 0);

		if (fresh && entry_add(out, w))
			goto out;
		ids[w - r->v] = (uint32_t)(out->nlines - 1);
	}
	/* The ranges in address order; a row overlapping the one before
	 * (code listed by two units) keeps only what is new. */
	for (size_t i = 0; i < r->n; i++) {
		struct row *w = &r->v[i];
		struct ks_causal_lrange *last = out->nranges ? &out->ranges[out->nranges - 1] : NULL;
		uint64_t lo = w->lo;

		if (!keep[i])
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
	free(by_id);
	free(ids);
	free(keep);
	return rc;
}

int ks_causal_lines_read(const char *path, const struct ks_causal_scope *sc,
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
	if ((rc = read_funcs(dwarf_getelf(dw), &r)) != 0) {
		rc = ks_err_set(err, rc, "out of memory reading the symbols of %s", path);
		goto out;
	}
	rc = build(&r, sc, out);
	if (rc == -ENOENT)
		ks_err_set(err, rc, "no line of %s is in scope (%zu source file%s%s)%s", path,
			   r.nfiles, r.nfiles == 1 ? "" : "s",
			   sc->nlines ? ", none matching --lines"
			   : ", those outside /usr/ in scope by default",
			   sc->nfunctions ? ": no function matching --functions holds one"
			   : sc->by_function && !r.nfuncs ? ": the program has no function "
			     "symbols (stripped?) for --granularity function" : "");
	else if (rc)
		ks_err_set(err, rc, "out of memory reading the line table of %s", path);
out:
	if (rc)
		ks_causal_lines_free(out);
	for (size_t i = 0; i < r.nfiles; i++)
		free(r.files[i]);
	free(r.files);
	for (size_t i = 0; i < r.nfuncs; i++)
		free(r.funcs[i].name);
	free(r.funcs);
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

static bool put_clean(FILE *out, const char *s)
{
	for (; s && *s; s++)
		if (fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out) == EOF)
			return false;
	return true;
}

int ks_causal_lines_write_table(const struct ks_causal_lines *l, FILE *out)
{
	bool ok = fputs("id\tfile\tline\tfunction\n", out) >= 0;

	for (size_t i = 0; ok && i < l->nlines; i++) {
		ok = fprintf(out, "%zu\t", i) > 0 && put_clean(out, l->lines[i].file) &&
		     fprintf(out, "\t%d\t", l->lines[i].line) > 0 &&
		     put_clean(out, l->lines[i].function) && fputc('\n', out) != EOF;
	}
	return ok && fflush(out) == 0 ? 0 : -EIO;
}

int ks_causal_lines_find_function(const struct ks_causal_lines *l, const char *name,
				  uint32_t *id, struct ks_err *err)
{
	const char *like[3];
	size_t nlike = 0;

	if (!l->by_function)
		return ks_err_set(err, -EINVAL, "functions are chosen with --granularity "
				  "function");
	for (size_t i = 0; i < l->nlines; i++)
		if (l->lines[i].function && strcmp(l->lines[i].function, name) == 0) {
			*id = (uint32_t)i;
			return 0;
		}
	for (size_t i = 0; i < l->nlines && nlike < 3; i++)
		if (l->lines[i].function && strstr(l->lines[i].function, name))
			like[nlike++] = l->lines[i].function;
	if (nlike)
		return ks_err_set(err, -ENOENT, "no function in scope is called '%s'; names "
				  "that contain it: %s%s%s%s%s", name, like[0],
				  nlike > 1 ? ", " : "", nlike > 1 ? like[1] : "",
				  nlike > 2 ? ", " : "", nlike > 2 ? like[2] : "");
	return ks_err_set(err, -ENOENT, "no function in scope is called '%s'", name);
}

int ks_causal_lines_read_table(const char *path, struct ks_causal_lines *l,
			       struct ks_err *err)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t cap = 0, n = 0, capl = 0, capf = 0, capn = 0;
	ssize_t len;
	int rc = 0;

	memset(l, 0, sizeof(*l));
	if (!f)
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	for (size_t no = 1; (len = getline(&text, &cap, f)) >= 0; no++) {
		char *tab1, *tab2, *tab3, *end;
		unsigned long id;
		long line;

		if (len && text[len - 1] == '\n')
			text[--len] = '\0';
		if (no == 1) {
			if (strcmp(text, "id\tfile\tline\tfunction") != 0) {
				rc = ks_err_set(err, -EINVAL, "%s:1: not a kscope causal line "
						"table (no 'id file line function' header)", path);
				break;
			}
			continue;
		}
		/* The file may hold a tab; the id, line and function do not. */
		tab1 = strchr(text, '\t');
		tab3 = tab1 ? strrchr(tab1 + 1, '\t') : NULL;
		tab2 = tab3 && tab3 > tab1 + 1 ? memrchr(tab1 + 1, '\t', (size_t)(tab3 - tab1 - 1))
		       : NULL;
		if (!tab1 || !tab2 || !tab3) {
			rc = ks_err_set(err, -EINVAL, "%s:%zu: not ID<TAB>FILE<TAB>LINE<TAB>FUNCTION",
					path, no);
			break;
		}
		*tab1 = *tab2 = *tab3 = '\0';
		errno = 0;
		id = strtoul(text, &end, 10);
		if (errno || *end || id != n) {
			rc = ks_err_set(err, -EINVAL, "%s:%zu: the id is '%s', expected %zu", path,
					no, text, n);
			break;
		}
		errno = 0;
		line = strtol(tab2 + 1, &end, 10);
		if (errno || *end || line <= 0 || line > INT32_MAX) {
			rc = ks_err_set(err, -EINVAL, "%s:%zu: '%s' is not a line number", path,
					no, tab2 + 1);
			break;
		}
		if (grow((void **)&l->lines, &capl, n + 1, sizeof(*l->lines)) ||
		    grow((void **)&l->files, &capf, n + 1, sizeof(*l->files)) ||
		    grow((void **)&l->functions, &capn, n + 1, sizeof(*l->functions)) ||
		    !(l->files[n] = strdup(tab1 + 1)) ||
		    !(l->functions[n] = tab3[1] ? strdup(tab3 + 1) : calloc(1, 1))) {
			if (l->files && n < capf && l->files[n]) {
				free(l->files[n]);
				l->files[n] = NULL;
			}
			rc = ks_err_set(err, -ENOMEM, "out of memory reading %s", path);
			break;
		}
		l->lines[n].file = l->files[n];
		l->lines[n].line = (int)line;
		l->lines[n].function = l->functions[n][0] ? l->functions[n] : NULL;
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
	for (size_t i = 0; l->functions && i < l->nlines; i++)
		free(l->functions[i]);
	free(l->files);
	free(l->functions);
	free(l->lines);
	free(l->ranges);
	memset(l, 0, sizeof(*l));
}
