/*
 * The parts of a shared line (mtreport_int.h, struct ks_mtr_part): its
 * touched words cut into runs that belong to one variable and, where
 * kscope can tell, to one member or element of it, so that a line shared
 * by four statics, or by the fields of one struct, names each.
 *
 * A word belongs to the variable of the line's "vars" that contains its
 * first byte.  A global's words are named from the DWARF of its module
 * (ks_dwsym_data_name, when the caller asks: o->field_names): a part is
 * a run of words with one name, "counters[2].v", "st.b".  Without debug
 * information, and for heap blocks (whose type no DWARF gives), a part
 * is a run of words that the same threads touched, named by its offset:
 * "counters+16", "block+48" ("counters", "block" at offset 0).  Words in
 * no known variable make parts named "unknown".
 *
 * The same DWARF gives the alignment of the globals of shared and near
 * lines, for the layout prediction (mtreport_layout.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dwsym.h"
#include "mtreport_int.h"

/* The variable of line l holding address a, or MTR_NONE. */
static uint32_t var_at(const struct ks_mtr_run *r, const struct ks_mtr_line *l, uint64_t a)
{
	for (uint32_t i = 0; i < l->nvars; i++) {
		const struct ks_mtr_var *v = &r->vars[l->vars[i]];

		if (a >= v->addr && a - v->addr < (v->size ? v->size : 1))
			return l->vars[i];
	}
	return MTR_NONE;
}

/* The threads that touched word w of l, as a bit set of their indexes in
 * the line (the first 64; enough to tell runs apart). */
static uint64_t touchers(const struct ks_mtr_line *l, unsigned w)
{
	uint64_t set = 0;

	for (uint32_t t = 0; t < l->nthreads && t < 64; t++)
		if ((l->threads[t].read[w / 64] | l->threads[t].write[w / 64]) >> (w % 64) & 1)
			set |= UINT64_C(1) << t;
	return set;
}

static bool touched(const struct ks_mtr_line *l, unsigned w)
{
	for (uint32_t t = 0; t < l->nthreads; t++)
		if ((l->threads[t].read[w / 64] | l->threads[t].write[w / 64]) >> (w % 64) & 1)
			return true;
	return false;
}

/* The DWARF name of byte off of global v into buf, false when there is
 * none. */
static bool dwarf_name(struct ks_dwsym_files *files, const struct ks_mtr_var *v, uint64_t off,
		       char *buf, size_t n)
{
	struct ks_dwsym_file *f;

	if (!files || v->kind != MTR_V_GLOBAL || !v->name || !v->obj || v->obj[0] != '/')
		return false;
	f = ks_dwsym_file_get(files, v->obj);
	return f && ks_dwsym_data_name(f, v->name, v->size, off, buf, n) == 0;
}

static int line_parts(struct ks_mtr_run *r, struct ks_mtr_line *l, struct ks_dwsym_files *files)
{
	struct ks_mtr_part parts[64];
	char names[64][256];
	uint64_t sets[64];
	unsigned np = 0;

	for (unsigned w = 0; w < l->nwords && w < 64; w++) {
		uint64_t a = l->addr + (uint64_t)w * l->word_size;
		uint32_t var;
		char name[256];
		bool named = false;
		uint64_t set, off = 0;

		if (!touched(l, w))
			continue;
		var = var_at(r, l, a);
		set = touchers(l, w);
		if (var != MTR_NONE) {
			off = a - r->vars[var].addr;
			named = dwarf_name(files, &r->vars[var], off, name, sizeof(name));
		}
		/* The same run goes on: the next word, of the same variable,
		 * with the same DWARF name, or (unnamed) the same threads. */
		if (np) {
			struct ks_mtr_part *p = &parts[np - 1];

			if (p->first + p->nwords == w && p->var == var &&
			    (named ? !strcmp(names[np - 1], name)
				   : (names[np - 1][0] == '\0' && sets[np - 1] == set))) {
				p->nwords++;
				continue;
			}
		}
		parts[np].var = var;
		parts[np].first = w;
		parts[np].nwords = 1;
		parts[np].var_off = off;
		sets[np] = set;
		if (named)
			snprintf(names[np], sizeof(names[np]), "%s", name);
		else
			names[np][0] = '\0';
		np++;
	}
	if (!np)
		return 0;
	l->parts = ks_mtr_arena_alloc(&r->arena, np * sizeof(*l->parts));
	if (!l->parts)
		return -ENOMEM;
	for (unsigned i = 0; i < np; i++) {
		struct ks_mtr_part *p = &parts[i];
		char buf[512];

		if (names[i][0]) {
			memcpy(buf, names[i], sizeof(names[i]));
		} else if (p->var == MTR_NONE) {
			snprintf(buf, sizeof(buf), "unknown");
		} else {
			const struct ks_mtr_var *v = &r->vars[p->var];
			const char *base = v->kind == MTR_V_HEAP ? "block" : v->name ? v->name : "global";

			if (p->var_off)
				snprintf(buf, sizeof(buf), "%s+%" PRIu64, base, p->var_off);
			else
				snprintf(buf, sizeof(buf), "%s", base);
		}
		p->dwarf = names[i][0] != '\0';
		if (!(p->name = ks_mtr_arena_strdup(&r->arena, buf)))
			return -ENOMEM;
		l->parts[i] = *p;
	}
	l->nparts = np;
	return 0;
}

/* The alignment of the globals of line l without one, from DWARF. */
static void globals_align(struct ks_mtr_run *r, const struct ks_mtr_line *l,
			  struct ks_dwsym_files *files)
{
	for (uint32_t i = 0; i < l->nvars; i++) {
		struct ks_mtr_var *v = &r->vars[l->vars[i]];
		struct ks_dwsym_file *f;
		uint64_t al;

		if (v->kind != MTR_V_GLOBAL || v->align || !v->name || !v->obj || v->obj[0] != '/')
			continue;
		f = ks_dwsym_file_get(files, v->obj);
		if (f && ks_dwsym_data_align(f, v->name, v->size, &al) == 0 && !(al & (al - 1)))
			v->align = al;
	}
}

int ks_mtr_parts(struct ks_mtr_run *r, const struct ks_mtr_opts *o)
{
	struct ks_dwsym_files files = { 0 };
	int rc = 0;

	for (size_t i = 0; i < r->nlines && !rc; i++)
		rc = line_parts(r, &r->lines[i], o->field_names ? &files : NULL);
	for (size_t i = 0; o->field_names && i < r->nlines + r->nnears; i++)
		globals_align(r, i < r->nlines ? &r->lines[i] : &r->nears[i - r->nlines], &files);
	ks_dwsym_files_free(&files);
	return rc;
}
