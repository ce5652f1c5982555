/* Source-level names of machine addresses (dwsym.h). */
#include "dwsym.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

/* From libstdc++: the C++ ABI's demangler. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* One address range of a compilation unit (module-relative). */
struct ks_dwsym_cu {
	Dwarf_Addr lo, hi;
	Dwarf_Die cu;
};

const Dwfl_Callbacks ks_dwsym_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

/* Cuts GCC's clone suffixes off name (in place): "heavy.constprop.0",
 * "f.isra.0", "g.part.1", "h.cold" are all code of the function the
 * programmer wrote, and a source-level report names them so. */
static void strip_clone_suffix(char *name)
{
	static const char *const kinds[] = { "constprop", "isra", "part", "cold",
					     "lto_priv", "localalias", "clone", NULL };
	char *dot = strchr(name, '.');

	while (dot && dot != name) {
		for (int i = 0; kinds[i]; i++) {
			size_t n = strlen(kinds[i]);

			if (strncmp(dot + 1, kinds[i], n) == 0 &&
			    (dot[1 + n] == '\0' || dot[1 + n] == '.')) {
				*dot = '\0';
				return;
			}
		}
		dot = strchr(dot + 1, '.');
	}
}

char *ks_dwsym_name(const char *raw)
{
	const char *at = strchr(raw, '@');
	size_t len = at && at != raw ? (size_t)(at - raw) : strlen(raw);
	char *plain = strndup(raw, len), *d;
	int status = -1;

	if (!plain)
		return NULL;
	strip_clone_suffix(plain);
	if (strncmp(plain, "_Z", 2))
		return plain;
	d = __cxa_demangle(plain, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return plain;
	}
	free(plain);
	return d;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		return dwarf_formstring(&a);
	if (dwarf_attr_integrate(die, DW_AT_name, &a))
		return dwarf_formstring(&a);
	return NULL;
}

/* The compilation unit holding look, for modules where libdw finds none.
 * libdw maps addresses to units through .debug_aranges, which gcc writes
 * and clang does not; without it, clang-built code would have no lines.
 * So the units' own address ranges (DW_AT_low_pc/high_pc or DW_AT_ranges,
 * any DWARF version) are indexed once per module and searched here. */
static bool find_cu(struct ks_dwsym_mod *m, Dwarf_Addr look, Dwarf_Die *cu, Dwarf_Addr *bias)
{
	Dwarf *dw = dwfl_module_getdwarf(m->dwfl, bias);
	Dwarf_Addr a;

	if (!dw)
		return false;
	if (!m->cus_indexed) {
		Dwarf_CU *unit = NULL;
		Dwarf_Die cudie;
		uint8_t unit_type;
		Dwarf_Half version;

		m->cus_indexed = true;
		while (dwarf_get_units(dw, unit, &unit, &version, &unit_type, &cudie, NULL) == 0) {
			Dwarf_Addr base, lo, hi;
			ptrdiff_t off = 0;

			while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
				if (m->ncus == m->capcus) {
					size_t cap = m->capcus ? 2 * m->capcus : 64;
					struct ks_dwsym_cu *v = realloc(m->cus, cap * sizeof(*v));

					if (!v)
						return false;
					m->cus = v;
					m->capcus = cap;
				}
				m->cus[m->ncus].lo = lo;
				m->cus[m->ncus].hi = hi;
				m->cus[m->ncus].cu = cudie;
				m->ncus++;
			}
		}
	}
	a = look - *bias;
	for (size_t i = 0; i < m->ncus; i++)
		if (a >= m->cus[i].lo && a < m->cus[i].hi) {
			*cu = m->cus[i].cu;
			return true;
		}
	return false;
}

/* Source file name for an index of the CU's file table. */
static const char *cu_file(Dwarf_Die *cudie, Dwarf_Word idx)
{
	Dwarf_Files *files;
	size_t nfiles;

	if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

int ks_dwsym_frames(struct ks_dwsym_mod *m, Dwarf_Addr look,
		    int (*fn)(void *ctx, const struct ks_dwsym_frame *f), void *ctx)
{
	struct ks_dwsym_frame f = { 0 };
	GElf_Off off;
	GElf_Sym sym;
	Dwfl_Line *line;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie, cu_found, *scopes = NULL;
	int nscopes, emitted = 0, rc = 0;

	if (!m->dwfl)
		return fn(ctx, &f);
	f.function = dwfl_module_addrinfo(m->dwfl, look, &off, &sym, NULL, NULL, NULL);
	line = dwfl_module_getsrc(m->dwfl, look);
	cudie = dwfl_module_addrdie(m->dwfl, look, &bias);
	if (!cudie && find_cu(m, look, &cu_found, &bias))
		cudie = &cu_found;
	nscopes = cudie ? dwarf_getscopes(cudie, look - bias, &scopes) : 0;
	if (line) {
		f.file = dwfl_lineinfo(line, NULL, &f.line, NULL, NULL, NULL);
	} else if (cudie) {
		Dwarf_Line *dl = dwarf_getsrc_die(cudie, look - bias);

		if (dl) {
			f.file = dwarf_linesrc(dl, NULL, NULL);
			if (dwarf_lineno(dl, &f.line) != 0)
				f.line = 0;
		}
	}
	/* Inlined calls: each DW_TAG_inlined_subroutine scope is a frame;
	 * its call_file/call_line place the next one out. */
	for (int i = 0; i < nscopes && emitted < KS_DWSYM_MAX_INLINE; i++) {
		struct ks_dwsym_frame in = { 0 };
		Dwarf_Attribute a;
		Dwarf_Word cf = 0, cl = 0;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		in.function = die_name(&scopes[i]);
		in.file = f.file;
		in.line = f.line > 0 ? f.line : 0;
		in.inlined = true;
		if ((rc = fn(ctx, &in)) != 0)
			break;
		emitted++;
		/* The caller's location is where this was inlined. */
		f.file = NULL;
		f.line = 0;
		if (dwarf_attr(&scopes[i], DW_AT_call_file, &a) && dwarf_formudata(&a, &cf) == 0)
			f.file = cu_file(cudie, cf);
		if (dwarf_attr(&scopes[i], DW_AT_call_line, &a) && dwarf_formudata(&a, &cl) == 0)
			f.line = (int)cl;
	}
	free(scopes);
	if (rc)
		return rc;
	if (f.line < 0)
		f.line = 0;
	return fn(ctx, &f);
}

void ks_dwsym_mod_free(struct ks_dwsym_mod *m)
{
	free(m->cus);
	memset(m, 0, sizeof(*m));
}

struct ks_dwsym_file *ks_dwsym_file_get(struct ks_dwsym_files *s, const char *path)
{
	struct ks_dwsym_file *m;

	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].path, path))
			return &s->v[i];
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		struct ks_dwsym_file *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->v = v;
		s->cap = cap;
	}
	m = &s->v[s->n];
	memset(m, 0, sizeof(*m));
	if (!(m->path = strdup(path)))
		return NULL;
	s->n++;
	/* One session per file: they all start at 0. */
	if (path[0] == '/' && (m->dwfl = dwfl_begin(&ks_dwsym_callbacks))) {
		const char *base = strrchr(path, '/') + 1;

		dwfl_report_begin(m->dwfl);
		m->mod.dwfl = dwfl_report_elf(m->dwfl, base, path, -1, 0, false);
		dwfl_report_end(m->dwfl, NULL, NULL);
	}
	return m;
}

void ks_dwsym_files_free(struct ks_dwsym_files *s)
{
	for (size_t i = 0; i < s->n; i++) {
		ks_dwsym_mod_free(&s->v[i].mod);
		ks_dwsym_file_vars_free(&s->v[i]);
		if (s->v[i].dwfl)
			dwfl_end(s->v[i].dwfl);
		free(s->v[i].path);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}
