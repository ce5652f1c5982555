/*
 * Source-level names of bytes inside global and static variables
 * (dwsym.h, ks_dwsym_data_name): the ELF symbol gives the variable's
 * address in its file, the module's DWARF the variable there and its
 * type, and the type the path down to the member or element holding a
 * byte: "counters[2].v", "st.b", "grid[1][3]".
 *
 * A module's data symbols are read once, sorted by name, and its
 * variables with a static address indexed once, by address, on first
 * need: every DW_TAG_variable in any unit, at file
 * scope or inside functions (function statics), whose location is the
 * single operation DW_OP_addr or, in DWARF 5 as clang writes it,
 * DW_OP_addrx.
 */
#include <dwarf.h>
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwsym.h"

struct ks_dwsym_var {
	Dwarf_Addr addr;       /* in the module's Dwfl addresses */
	Dwarf_Off die;         /* its DIE's offset in .debug_info */
};

static int var_cmp(const void *a, const void *b)
{
	const struct ks_dwsym_var *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The static address of a variable DIE, false when it has none (a local,
 * a thread-local, a declaration, a location list). */
static bool var_addr(Dwarf_Die *die, Dwarf_Addr *addr)
{
	Dwarf_Attribute a, res;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr(die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &n) != 0 ||
	    n != 1)
		return false;
	if (ops[0].atom == DW_OP_addr) {
		*addr = ops[0].number;
		return true;
	}
	if (ops[0].atom == DW_OP_addrx || ops[0].atom == DW_OP_GNU_addr_index)
		return dwarf_getlocation_attr(&a, &ops[0], &res) == 0 &&
		       dwarf_formaddr(&res, addr) == 0;
	return false;
}

static int index_add(struct ks_dwsym_file *f, Dwarf_Addr addr, Dwarf_Off off)
{
	if (f->nvars == f->capvars) {
		size_t cap = f->capvars ? 2 * f->capvars : 256;
		struct ks_dwsym_var *v = realloc(f->vars, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		f->vars = v;
		f->capvars = cap;
	}
	f->vars[f->nvars].addr = addr;
	f->vars[f->nvars].die = off;
	f->nvars++;
	return 0;
}

/* The variables under die (its children, recursively into functions,
 * blocks and namespaces; not into types, whose children are members). */
static int index_scope(struct ks_dwsym_file *f, Dwarf_Die *die, Dwarf_Addr bias, int depth)
{
	Dwarf_Die c;
	int rc;

	if (depth > 64 || dwarf_child(die, &c) != 0)
		return 0;
	do {
		Dwarf_Addr a;

		switch (dwarf_tag(&c)) {
		case DW_TAG_variable:
			if (var_addr(&c, &a) && (rc = index_add(f, a + bias, dwarf_dieoffset(&c))))
				return rc;
			break;
		case DW_TAG_subprogram:
		case DW_TAG_lexical_block:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_namespace:
			if ((rc = index_scope(f, &c, bias, depth + 1)))
				return rc;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static Dwarf *file_dwarf(struct ks_dwsym_file *f, Dwarf_Addr *bias)
{
	Dwarf *dw;

	if (!f->mod.dwfl || !(dw = dwfl_module_getdwarf(f->mod.dwfl, bias)))
		return NULL;
	if (!f->vars_indexed) {
		Dwarf_CU *unit = NULL;
		Dwarf_Die cudie;
		uint8_t unit_type;
		Dwarf_Half version;

		f->vars_indexed = true;
		while (dwarf_get_units(dw, unit, &unit, &version, &unit_type, &cudie, NULL) == 0)
			if (index_scope(f, &cudie, *bias, 0))
				break;
		if (f->nvars)
			qsort(f->vars, f->nvars, sizeof(*f->vars), var_cmp);
	}
	return dw;
}

struct ks_dwsym_dsym {
	char *name;            /* as the memory tools write it: raw, or demangled */
	uint64_t size;
	Dwarf_Addr addr;
};

static int dsym_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ks_dwsym_dsym *)a)->name,
		      ((const struct ks_dwsym_dsym *)b)->name);
}

/* The module's data symbols, sorted by name, read on first need. */
static void dsyms_read(struct ks_dwsym_file *f)
{
	int n = dwfl_module_getsymtab(f->mod.dwfl);

	f->dsyms_read = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr a;
		const char *name = dwfl_module_getsym_info(f->mod.dwfl, i, &s, &a, NULL, NULL,
							   NULL);
		struct ks_dwsym_dsym *d;

		if (!name || GELF_ST_TYPE(s.st_info) != STT_OBJECT || s.st_shndx == SHN_UNDEF)
			continue;
		if (f->ndsyms == f->capdsyms) {
			size_t cap = f->capdsyms ? 2 * f->capdsyms : 256;
			struct ks_dwsym_dsym *v = realloc(f->dsyms, cap * sizeof(*v));

			if (!v)
				break;
			f->dsyms = v;
			f->capdsyms = cap;
		}
		d = &f->dsyms[f->ndsyms];
		d->name = name[0] == '_' && name[1] == 'Z' ? ks_dwsym_name(name) : strdup(name);
		if (!d->name)
			break;
		d->size = s.st_size;
		d->addr = a;
		f->ndsyms++;
	}
	if (f->ndsyms)
		qsort(f->dsyms, f->ndsyms, sizeof(*f->dsyms), dsym_cmp);
}

/* The ELF symbol of a data object named sym (as the memory tools write
 * it: raw, or demangled for C++) of size size (0: any): its address. */
static bool symbol_addr(struct ks_dwsym_file *f, const char *sym, uint64_t size,
			Dwarf_Addr *addr)
{
	size_t lo = 0, hi;

	if (!f->dsyms_read)
		dsyms_read(f);
	hi = f->ndsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(f->dsyms[mid].name, sym) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < f->ndsyms && !strcmp(f->dsyms[lo].name, sym); lo++)
		if (!size || f->dsyms[lo].size == size) {
			*addr = f->dsyms[lo].addr;
			return true;
		}
	return false;
}

/* Appends to buf (of n bytes, *len used); false when it does not fit. */
static bool put(char *buf, size_t n, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool put(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(buf + *len, n - *len, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= n - *len)
		return false;
	*len += (size_t)w;
	return true;
}

/* The type of die (DW_AT_type), typedefs and qualifiers peeled. */
static bool type_of(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute a;
	Dwarf_Die t;

	if (!dwarf_attr_integrate(die, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
		return false;
	return dwarf_peel_type(&t, type) == 0;
}

/* The number of elements of one array dimension, 0 when not known. */
static Dwarf_Word dim_count(Dwarf_Die *sub)
{
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (dwarf_attr(sub, DW_AT_count, &a) && dwarf_formudata(&a, &w) == 0)
		return w;
	if (dwarf_attr(sub, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &w) == 0) {
		Dwarf_Word lo = 0;

		if (dwarf_attr(sub, DW_AT_lower_bound, &a))
			(void)dwarf_formudata(&a, &lo);
		return w >= lo ? w - lo + 1 : 0;
	}
	return 0;
}

/* Descends from type through arrays, structures, unions and classes to
 * the member or element holding byte off, appending "[i]" and ".name" to
 * buf. */
static void walk(Dwarf_Die *type, Dwarf_Word off, char *buf, size_t n, size_t *len)
{
	Dwarf_Die t = *type;

	for (int depth = 0; depth < 32; depth++) {
		int tag = dwarf_tag(&t);

		if (tag == DW_TAG_array_type) {
			Dwarf_Word counts[16], esize, stride;
			Dwarf_Die elem, sub;
			unsigned nd = 0;

			if (!type_of(&t, &elem) || dwarf_aggregate_size(&elem, &esize) != 0 || !esize)
				return;
			if (dwarf_child(&t, &sub) == 0)
				do
					if (dwarf_tag(&sub) == DW_TAG_subrange_type && nd < 16)
						counts[nd++] = dim_count(&sub);
				while (dwarf_siblingof(&sub, &sub) == 0);
			if (!nd)
				return;
			/* Row-major: the stride of dimension i is the element
			 * size times the counts after it. */
			for (unsigned i = 0; i < nd; i++) {
				stride = esize;
				for (unsigned j = i + 1; j < nd; j++)
					stride *= counts[j] ? counts[j] : 1;
				if (!put(buf, n, len, "[%" PRIu64 "]", (uint64_t)(off / stride)))
					return;
				off %= stride;
			}
			t = elem;
		} else if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
			   tag == DW_TAG_union_type) {
			Dwarf_Die m, mt, found;
			Dwarf_Word at = 0, msize, found_at = 0;
			bool have = false, base = false;

			if (dwarf_child(&t, &m) != 0)
				return;
			do {
				Dwarf_Attribute a;
				int mtag = dwarf_tag(&m);

				if (mtag != DW_TAG_member && mtag != DW_TAG_inheritance)
					continue;
				if (dwarf_attr(&m, DW_AT_data_member_location, &a)) {
					if (dwarf_formudata(&a, &at) != 0)
						continue; /* a location expression: not followed */
				} else {
					at = 0; /* a union's members */
				}
				if (!type_of(&m, &mt) || dwarf_aggregate_size(&mt, &msize) != 0)
					continue;
				if (off >= at && off < at + msize) {
					found = m;
					found_at = at;
					have = true;
					base = mtag == DW_TAG_inheritance;
					break;
				}
			} while (dwarf_siblingof(&m, &m) == 0);
			if (!have)
				return; /* padding */
			if (!base) {
				const char *name = dwarf_diename(&found);

				/* An anonymous struct or union member: its members
				 * are named as the enclosing type's. */
				if (name && !put(buf, n, len, ".%s", name))
					return;
			}
			off -= found_at;
			if (!type_of(&found, &t))
				return;
		} else {
			return; /* a scalar, pointer or enumeration */
		}
	}
}

/* The DIE of the variable whose ELF symbol is sym (of size size). */
static bool var_die(struct ks_dwsym_file *f, const char *sym, uint64_t size, Dwarf_Die *die)
{
	Dwarf_Addr addr, bias;
	Dwarf *dw;
	size_t lo = 0, hi;

	if (!f || !f->mod.dwfl || !(dw = file_dwarf(f, &bias)) || !symbol_addr(f, sym, size, &addr))
		return false;
	hi = f->nvars;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->vars[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->nvars && f->vars[lo].addr == addr && dwarf_offdie(dw, f->vars[lo].die, die);
}

/* The alignment of a type: its DW_AT_alignment (an _Alignas, alignas or
 * aligned attribute), else that of its elements or members, else its
 * size for a scalar (at most 16); 1 when nothing says. */
static uint64_t type_align(Dwarf_Die *type, int depth)
{
	Dwarf_Attribute a;
	Dwarf_Word w;
	Dwarf_Die t, m;
	uint64_t al = 1;
	int tag;

	if (depth > 32)
		return 1;
	if (dwarf_attr(type, DW_AT_alignment, &a) && dwarf_formudata(&a, &w) == 0 && w)
		return w;
	tag = dwarf_tag(type);
	switch (tag) {
	case DW_TAG_typedef:
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
	case DW_TAG_array_type:
		if (dwarf_attr(type, DW_AT_type, &a) && dwarf_formref_die(&a, &t))
			return type_align(&t, depth + 1);
		return 1;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		if (dwarf_child(type, &m) == 0)
			do {
				uint64_t x = 1;

				if (dwarf_tag(&m) != DW_TAG_member &&
				    dwarf_tag(&m) != DW_TAG_inheritance)
					continue;
				if (dwarf_attr(&m, DW_AT_alignment, &a) &&
				    dwarf_formudata(&a, &w) == 0 && w)
					x = w;
				else if (dwarf_attr(&m, DW_AT_type, &a) &&
					 dwarf_formref_die(&a, &t))
					x = type_align(&t, depth + 1);
				if (x > al)
					al = x;
			} while (dwarf_siblingof(&m, &m) == 0);
		return al;
	default:
		if (dwarf_aggregate_size(type, &w) == 0 && w) {
			while (al < w && al < 16)
				al <<= 1;
			return al;
		}
		return 1;
	}
}

int ks_dwsym_data_align(struct ks_dwsym_file *f, const char *sym, uint64_t size,
			uint64_t *align)
{
	Dwarf_Die die, t;
	Dwarf_Attribute a;
	Dwarf_Word w;

	if (!var_die(f, sym, size, &die))
		return -ENOENT;
	if (dwarf_attr_integrate(&die, DW_AT_alignment, &a) && dwarf_formudata(&a, &w) == 0 &&
	    w) {
		*align = w;
		return 0;
	}
	if (!dwarf_attr_integrate(&die, DW_AT_type, &a) || !dwarf_formref_die(&a, &t))
		return -ENOENT;
	*align = type_align(&t, 0);
	return 0;
}

int ks_dwsym_data_name(struct ks_dwsym_file *f, const char *sym, uint64_t size,
		       uint64_t off, char *buf, size_t n)
{
	size_t len = 0;
	Dwarf_Die die, type;
	const char *dwname;

	if (!n || !var_die(f, sym, size, &die))
		return -ENOENT;
	/* The name people wrote: gcc's symbol for a function's static is
	 * "name.N". */
	dwname = dwarf_diename(&die);
	if (dwname && !strncmp(sym, dwname, strlen(dwname)) && sym[strlen(dwname)] == '.')
		sym = dwname;
	if (!put(buf, n, &len, "%s", sym))
		return -ENAMETOOLONG;
	if (type_of(&die, &type))
		walk(&type, off, buf, n, &len);
	return 0;
}

void ks_dwsym_file_vars_free(struct ks_dwsym_file *f)
{
	free(f->vars);
	f->vars = NULL;
	f->nvars = f->capvars = 0;
	f->vars_indexed = false;
	for (size_t i = 0; i < f->ndsyms; i++)
		free(f->dsyms[i].name);
	free(f->dsyms);
	f->dsyms = NULL;
	f->ndsyms = f->capdsyms = 0;
	f->dsyms_read = false;
}
