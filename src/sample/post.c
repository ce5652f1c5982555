/*
 * Post-processing (post.h): raw files -> one symbolized profile.
 *
 * For each raw file (one process image): read the process records
 * (modules, command line, counters, end), gather the thread chunks and
 * walk each thread's records in order, keeping its open regions so that
 * every sample's call path starts with the regions it was taken in.  Each
 * return address is symbolized once per file with libdw, inlined frames
 * expanded, and the result cached.  Files of the same pid (a process that
 * called exec) become one process.
 */
#include "post.h"

#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "dwsym.h"
#include "raw_read.h"

/* ------------------------------------------------------------------ */
/* Per-file symbolization                                              */
/* ------------------------------------------------------------------ */

/* A function symbol of a module known from a KS_RAW_IMAGE (the vdso). */
struct isym {
	uint64_t value, size;  /* ELF address and size */
	uint32_t name;         /* string id */
	bool global;           /* STB_GLOBAL (preferred over a weak alias) */
};

struct module {
	uint64_t base, low, high;
	const char *path;      /* inside the mapped raw file */
	uint32_t name;         /* string id */
	uint32_t row;          /* its row in the profile's modules */
	struct ks_dwsym_mod sym; /* sym.dwfl NULL if libdw could not load it */
	bool kscope;           /* kscope's own runtime: its frames are dropped */
	struct isym *isyms;    /* from its image, by value; NULL if none */
	size_t nisyms;
};

/* Cached symbolization of one address: frame ids, innermost first. */
struct addr_entry {
	uint64_t pc;           /* 0: empty slot */
	uint32_t first;        /* index into symtab.ids */
	uint32_t count;
};

struct symtab {
	struct ks_profile *p;
	Dwfl *dwfl;
	struct module *mods;
	size_t nmods, capmods;
	struct addr_entry *slots;
	size_t cap, used;
	uint32_t *ids;
	size_t nids, capids;
	struct ks_post_stats *stats;
	uint32_t process;      /* the profile's process these modules are in */
};

static uint32_t intern_name(struct ks_profile *p, const char *name)
{
	char *clean = ks_dwsym_name(name);
	uint32_t id = clean ? ks_profile_intern(p, clean) : KS_NONE;

	free(clean);
	return id;
}

static const char *basename_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int symtab_init(struct symtab *st, struct ks_profile *p, uint32_t process,
		       struct ks_post_stats *stats)
{
	memset(st, 0, sizeof(*st));
	st->p = p;
	st->process = process;
	st->stats = stats;
	st->dwfl = dwfl_begin(&ks_dwsym_callbacks);
	if (!st->dwfl)
		return -ENOMEM;
	dwfl_report_begin(st->dwfl);
	return 0;
}

static void symtab_free(struct symtab *st)
{
	if (st->dwfl)
		dwfl_end(st->dwfl);
	for (size_t i = 0; i < st->nmods; i++) {
		ks_dwsym_mod_free(&st->mods[i].sym);
		free(st->mods[i].isyms);
	}
	free(st->mods);
	free(st->slots);
	free(st->ids);
	memset(st, 0, sizeof(*st));
}

/* The string id of a build-id's bytes in lowercase hex (what
 * `file`, `readelf -n` and debuginfod print); KS_NONE for none. */
static uint32_t intern_build_id(struct ks_profile *p, const unsigned char *bits,
				size_t n, bool *oom)
{
	static const char hexd[] = "0123456789abcdef";
	char *hex;
	uint32_t id;

	if (!bits || n == 0)
		return KS_NONE;
	hex = malloc(2 * n + 1);
	if (!hex) {
		*oom = true;
		return KS_NONE;
	}
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = hexd[bits[i] >> 4];
		hex[2 * i + 1] = hexd[bits[i] & 15];
	}
	hex[2 * n] = '\0';
	id = ks_profile_intern(p, hex);
	free(hex);
	*oom = id == KS_NONE;
	return id;
}

/* The profile's module table: one row per module per process, for
 * symbolizing the profile again later (docs/profile-db.md, modules). */
static int record_module(struct symtab *st, struct module *mod,
			 const unsigned char *bits, size_t nbits)
{
	struct ks_pmodule *pm;
	bool oom = false;
	uint32_t bid = intern_build_id(st->p, bits, nbits, &oom);

	if (oom)
		return -ENOMEM;
	/* A process that called exec has one raw file per image: a module
	 * both images mapped at the same place is one row. */
	for (size_t i = st->p->n_modules; i-- > 0 && st->p->modules[i].process == st->process;) {
		pm = &st->p->modules[i];
		if (pm->path == mod->name && pm->base == mod->base && pm->low == mod->low &&
		    pm->high == mod->high && pm->build_id == bid) {
			mod->row = (uint32_t)i;
			return 0;
		}
	}
	mod->row = (uint32_t)st->p->n_modules;
	pm = ks_profile_push(st->p, modules);
	if (!pm)
		return -ENOMEM;
	pm->process = st->process;
	pm->path = mod->name;
	pm->base = mod->base;
	pm->low = mod->low;
	pm->high = mod->high;
	pm->build_id = bid;
	return 0;
}

static int symtab_add_module(struct symtab *st, const struct ks_raw_module *m,
			     const char *path)
{
	const unsigned char *bits = NULL;
	struct module *mod;
	GElf_Addr vaddr;
	int nbits = 0;

	for (size_t i = 0; i < st->nmods; i++)
		if (st->mods[i].base == m->base && strcmp(st->mods[i].path, path) == 0)
			return 0; /* seen again after a dlopen */
	mod = ks_profile_grow((void **)&st->mods, &st->nmods, &st->capmods, sizeof(*mod));
	if (!mod)
		return -ENOMEM;
	mod->base = m->base;
	mod->low = m->low;
	mod->high = m->high;
	mod->path = path;
	mod->name = ks_profile_intern(st->p, path);
	/* The runtime's thread trampoline sits between start_thread and the
	 * thread's function: it is kscope's, not the program's. */
	mod->kscope = strcmp(basename_of(path), "libkscope.so") == 0;
	if (mod->name == KS_NONE)
		return -ENOMEM;
	if (path[0] == '/')
		mod->sym.dwfl = dwfl_report_elf(st->dwfl, basename_of(path), path, -1,
					    m->base, false);
	/* The build-id note of the file as it is now: if it was rebuilt since
	 * the run, this is the new one (nothing better is known here). */
	if (mod->sym.dwfl)
		nbits = dwfl_module_build_id(mod->sym.dwfl, &bits, &vaddr);
	return record_module(st, mod, bits, nbits > 0 ? (size_t)nbits : 0);
}

/* ------------------------------------------------------------------ */
/* Modules known from their image (the vdso)                           */
/* ------------------------------------------------------------------ */

static int push_id(struct symtab *st, uint32_t id);

static int isym_cmp(const void *a, const void *b)
{
	const struct isym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	return (int)y->global - (int)x->global; /* global first */
}

/* The function symbols (.dynsym, .symtab) and the build-id note of an ELF
 * image in memory, into mod.  A symbol defined under two names at one
 * address (the vdso's __vdso_clock_gettime, global, and its weak alias
 * clock_gettime) keeps the global one, the vdso's own definition. */
static int image_read(struct symtab *st, struct module *mod, Elf *elf)
{
	struct isym *v = NULL;
	size_t n = 0, cap = 0, k = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int rc = 0;

	while ((scn = elf_nextscn(elf, scn)) != NULL && !rc) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(d = elf_getdata(scn, NULL)))
			continue;
		if (sh.sh_type == SHT_NOTE) {
			GElf_Nhdr nh;
			size_t off = 0, name_off, desc_off;

			while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
				if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
				    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0) {
					bool oom = false;
					uint32_t bid = intern_build_id(
						st->p, (const unsigned char *)d->d_buf + desc_off,
						nh.n_descsz, &oom);

					if (oom)
						rc = -ENOMEM;
					else
						st->p->modules[mod->row].build_id = bid;
				}
			}
			continue;
		}
		if (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB)
			continue;
		for (size_t i = 0; sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;
			struct isym *s;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !name[0])
				continue;
			s = ks_profile_grow((void **)&v, &n, &cap, sizeof(*v));
			if (!s) {
				rc = -ENOMEM;
				break;
			}
			s->value = sym.st_value;
			s->size = sym.st_size;
			s->global = GELF_ST_BIND(sym.st_info) == STB_GLOBAL;
			s->name = intern_name(st->p, name);
			if (s->name == KS_NONE) {
				rc = -ENOMEM;
				break;
			}
		}
	}
	if (rc) {
		free(v);
		return rc;
	}
	/* By address; one name per address. */
	if (n)
		qsort(v, n, sizeof(*v), isym_cmp);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || v[k - 1].value != v[i].value)
			v[k++] = v[i];
	free(mod->isyms);
	mod->isyms = v;
	mod->nisyms = k;
	return 0;
}

/* A KS_RAW_IMAGE record: the module it copies (the one whose range starts
 * at its address and that no file describes) gets its symbols and
 * build-id.  An image libelf cannot read leaves the module unnamed. */
static int symtab_add_image(struct symtab *st, const struct ks_raw_image *img)
{
	struct module *mod = NULL;
	char *copy;
	Elf *elf;
	int rc;

	for (size_t i = st->nmods; i-- > 0;)
		if (st->mods[i].low == img->low && !st->mods[i].sym.dwfl) {
			mod = &st->mods[i];
			break;
		}
	if (!mod || img->size == 0)
		return 0;
	/* libelf reads the image in place; a copy keeps the raw file's
	 * mapping untouched and gives the image its own alignment. */
	copy = malloc(img->size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, img->data, img->size);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, img->size);
	rc = elf ? image_read(st, mod, elf) : 0;
	if (elf)
		elf_end(elf);
	free(copy);
	return rc;
}

/* The frame of an address in a module known from its image: the function
 * whose symbol covers it, or the module's name. */
static int image_frame(struct symtab *st, struct module *mod, uint64_t look,
		       struct ks_pframe *f)
{
	size_t lo = 0, hi = mod->nisyms;
	uint64_t a = look - mod->base;

	while (lo < hi) { /* first symbol above a */
		size_t mid = lo + (hi - lo) / 2;

		if (mod->isyms[mid].value <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && (mod->isyms[lo - 1].size == 0 ||
		       a < mod->isyms[lo - 1].value + mod->isyms[lo - 1].size))
		f->function = mod->isyms[lo - 1].name;
	else
		f->function = ks_profile_intern(st->p, basename_of(mod->path));
	if (f->function == KS_NONE)
		return -ENOMEM;
	return push_id(st, ks_profile_frame(st->p, f));
}

static struct module *find_module(struct symtab *st, uint64_t pc)
{
	for (size_t i = st->nmods; i-- > 0;)
		if (pc >= st->mods[i].low && pc < st->mods[i].high)
			return &st->mods[i];
	return NULL;
}

static int push_id(struct symtab *st, uint32_t id)
{
	uint32_t *slot;

	if (id == KS_NONE)
		return -ENOMEM;
	slot = ks_profile_grow((void **)&st->ids, &st->nids, &st->capids, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	*slot = id;
	return 0;
}

struct sym_ctx {
	struct symtab *st;
	struct module *mod;
	struct ks_pframe f;
};

/* One frame of ks_dwsym_frames into the profile. */
static int add_frame(void *ctx, const struct ks_dwsym_frame *d)
{
	struct sym_ctx *c = ctx;
	struct ks_profile *p = c->st->p;
	struct ks_pframe f = c->f;

	if (d->function)
		f.function = intern_name(p, d->function);
	else if (d->inlined)
		f.function = intern_name(p, "[inlined]");
	else /* no symbol: the sample counts under the module's name */
		f.function = ks_profile_intern(p, basename_of(c->mod->path));
	f.file = d->file ? ks_profile_intern(p, d->file) : KS_NONE;
	f.line = (uint32_t)(d->line > 0 ? d->line : 0);
	f.inlined = d->inlined;
	if (f.function == KS_NONE || (d->file && f.file == KS_NONE))
		return -ENOMEM;
	return push_id(c->st, ks_profile_frame(p, &f));
}

/* Symbolizes pc (lookup at pc - adjust: return addresses point after the
 * call) into frames, innermost first, appended to st->ids. */
static int symbolize(struct symtab *st, uint64_t pc, uint64_t adjust)
{
	struct ks_profile *p = st->p;
	struct sym_ctx c = { .st = st, .mod = find_module(st, pc) };

	memset(&c.f, 0, sizeof(c.f));
	c.f.file = KS_NONE;
	if (!c.mod) {
		char hex[32];

		st->stats->unknown++;
		snprintf(hex, sizeof(hex), "0x%" PRIx64, pc);
		c.f.function = ks_profile_intern(p, hex);
		c.f.module = ks_profile_intern(p, "[unknown]");
		c.f.address = pc;
		return push_id(st, ks_profile_frame(p, &c.f));
	}
	if (c.mod->kscope)
		return 0; /* no frame: the path goes straight to the caller */
	c.f.module = c.mod->name;
	c.f.address = pc - c.mod->base;
	if (c.mod->isyms)
		return image_frame(st, c.mod, pc - adjust, &c.f);
	return ks_dwsym_frames(&c.mod->sym, pc - adjust, add_frame, &c);
}

/* The frames of pc (cached): *first indexes st->ids, *count frames. */
static int symtab_lookup(struct symtab *st, uint64_t pc, bool is_return,
			 uint32_t *first, uint32_t *count)
{
	uint64_t key = pc * 2 + is_return; /* same pc, other lookup: other key */
	size_t j;
	int rc;

	if ((st->used + 1) * 2 > st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 4096;
		struct addr_entry *s = calloc(cap, sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (size_t i = 0; i < st->cap; i++) {
			if (!st->slots[i].pc)
				continue;
			for (j = (st->slots[i].pc * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			     s[j].pc; j = (j + 1) & (cap - 1))
				;
			s[j] = st->slots[i];
		}
		free(st->slots);
		st->slots = s;
		st->cap = cap;
	}
	for (j = ((key + 1) * 0x9e3779b97f4a7c15ull >> 20) & (st->cap - 1); st->slots[j].pc;
	     j = (j + 1) & (st->cap - 1))
		if (st->slots[j].pc == key + 1) {
			*first = st->slots[j].first;
			*count = st->slots[j].count;
			return 0;
		}
	{
		size_t before = st->nids;

		rc = symbolize(st, pc, is_return && pc > 0 ? 1 : 0);
		if (rc)
			return rc;
		st->slots[j].pc = key + 1;
		st->slots[j].first = (uint32_t)before;
		st->slots[j].count = (uint32_t)(st->nids - before);
		st->used++;
		st->stats->addresses++;
		*first = st->slots[j].first;
		*count = st->slots[j].count;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Threads and their records                                           */
/* ------------------------------------------------------------------ */

struct chunk_ref {
	const struct ks_raw_chunk *c;
	size_t order;          /* file order, to keep the sort stable */
};

static int chunk_cmp(const void *a, const void *b)
{
	const struct chunk_ref *x = a, *y = b;

	if (x->c->tid != y->c->tid)
		return x->c->tid < y->c->tid ? -1 : 1;
	if (x->c->seq != y->c->seq)
		return x->c->seq < y->c->seq ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* One open region (or pause) on a thread. */
struct open_slice {
	uint32_t slice;        /* index into p->slices */
	uint32_t frame;        /* its call-path frame (regions only) */
};

struct proc_ctx {
	struct ks_profile *p;
	struct symtab *st;
	uint32_t process;
	uint64_t origin;       /* ns subtracted from every timestamp */
	uint64_t last_ts;      /* latest timestamp seen in the file */
	uint32_t ncounters;    /* per-sample counters in this file */
};

static uint64_t rel(const struct proc_ctx *pc, uint64_t ts)
{
	return ts > pc->origin ? ts - pc->origin : 0;
}

static uint32_t find_thread(struct ks_profile *p, uint32_t process, int32_t tid)
{
	for (size_t i = p->n_threads; i-- > 0;)
		if (p->threads[i].process == process && p->threads[i].tid == tid)
			return (uint32_t)i;
	return KS_NONE;
}

static uint32_t get_thread(struct proc_ctx *pc, int32_t tid, uint64_t ts)
{
	uint32_t t = find_thread(pc->p, pc->process, tid);
	struct ks_pthread *th;

	if (t != KS_NONE)
		return t;
	th = ks_profile_push(pc->p, threads);
	if (!th)
		return KS_NONE;
	th->process = pc->process;
	th->tid = tid;
	th->name = 0;
	th->start = th->end = rel(pc, ts);
	return (uint32_t)pc->p->n_threads - 1;
}

static struct ks_pslice *new_slice(struct proc_ctx *pc, uint32_t thread,
				   uint8_t kind, const char *name, uint64_t ts,
				   uint32_t depth)
{
	struct ks_pslice *s = ks_profile_push(pc->p, slices);

	if (!s)
		return NULL;
	s->thread = thread;
	s->kind = kind;
	s->name = ks_profile_intern(pc->p, name);
	s->depth = depth;
	s->start = s->end = rel(pc, ts);
	s->peer = -1;
	return s;
}

static int add_sample(struct proc_ctx *pc, uint32_t thread,
		      const struct ks_raw_sample *s, const struct open_slice *open,
		      size_t nopen)
{
	struct ks_profile *p = pc->p;
	const uint64_t *frames = s->data + s->ncounters;
	struct ks_psample *ps;
	uint32_t node = KS_NONE;
	int rc;

	/* Regions first (outermost), then the stack from its outermost frame. */
	for (size_t i = 0; i < nopen; i++) {
		if (open[i].frame == KS_NONE)
			continue;
		node = ks_profile_node(p, node, open[i].frame);
		if (node == KS_NONE)
			return -ENOMEM;
	}
	if (s->nframes == 0) {
		struct ks_pframe f = { 0 };

		f.function = ks_profile_intern(p, s->h.flags & KS_RAW_SAMPLE_AT_END
						  ? KS_POST_AT_END_FRAME : "[no stack]");
		f.module = ks_profile_intern(p, "[unknown]");
		f.file = KS_NONE;
		node = ks_profile_node(p, node, ks_profile_frame(p, &f));
		if (node == KS_NONE)
			return -ENOMEM;
	}
	for (int i = s->nframes - 1; i >= 0; i--) {
		uint32_t first, count;

		if (frames[i] == 0)
			continue;
		rc = symtab_lookup(pc->st, frames[i], i > 0, &first, &count);
		if (rc)
			return rc;
		/* ids are innermost first: outermost (the containing
		 * function) is the last. */
		for (uint32_t k = count; k-- > 0;) {
			node = ks_profile_node(p, node, pc->st->ids[first + k]);
			if (node == KS_NONE)
				return -ENOMEM;
		}
	}
	ps = ks_profile_push(p, samples);
	if (!ps)
		return -ENOMEM;
	ps->ts = rel(pc, s->ts);
	ps->thread = thread;
	ps->node = node;
	ps->clock = (uint8_t)(s->h.flags & KS_RAW_CLOCK_MASK);
	ps->overrun = s->overrun;
	ps->cpu_ns = s->cpu_ns;
	ps->minflt = s->minflt;
	ps->majflt = s->majflt;
	ps->counters = KS_NONE;
	if (s->ncounters) {
		ps->counters = (uint32_t)p->n_counter_values;
		for (unsigned i = 0; i < s->ncounters; i++) {
			uint64_t *v = ks_profile_push(p, counter_values);

			if (!v)
				return -ENOMEM;
			*v = s->data[i];
		}
	}
	p->threads[thread].samples++;
	if (s->cpu_ns > p->threads[thread].cpu_ns)
		p->threads[thread].cpu_ns = s->cpu_ns;
	return 0;
}

/* Walks one thread's chunks (already in order). */
static int do_thread(struct proc_ctx *pc, const struct chunk_ref *refs, size_t n,
		     struct ks_post_stats *stats)
{
	struct ks_profile *p = pc->p;
	struct open_slice open[256];
	size_t nopen = 0;
	uint32_t thread = KS_NONE;
	uint64_t last = 0;
	int rc = 0;

	for (size_t k = 0; k < n; k++) {
		const struct ks_raw_rec *r;
		struct ks_raw_iter it;
		size_t bad = 0;

		ks_raw_iter_chunk(refs[k].c, &it);
		while ((r = ks_raw_next(&it, &bad)) != NULL) {
			const struct ks_raw_named *nm = (const void *)r;
			uint64_t ts = 0;

			switch (r->type) {
			case KS_RAW_THREAD_BEGIN: ts = ((const struct ks_raw_thread_begin *)r)->ts; break;
			case KS_RAW_THREAD_END: ts = ((const struct ks_raw_thread_end *)r)->ts; break;
			case KS_RAW_SAMPLE: ts = ((const struct ks_raw_sample *)r)->ts; break;
			case KS_RAW_MPI: ts = ((const struct ks_raw_mpi *)r)->ts_end; break;
			case KS_RAW_REGION_PUSH: case KS_RAW_REGION_POP: case KS_RAW_MARK:
			case KS_RAW_RANGE_START: case KS_RAW_RANGE_END:
			case KS_RAW_PAUSE: case KS_RAW_RESUME:
				ts = nm->ts;
				break;
			default:
				break;
			}
			if (thread == KS_NONE) {
				thread = get_thread(pc, refs[k].c->tid, ts);
				if (thread == KS_NONE)
					return -ENOMEM;
			}
			if (ts > last)
				last = ts;
			switch (r->type) {
			case KS_RAW_THREAD_BEGIN: {
				const struct ks_raw_thread_begin *b = (const void *)r;
				char name[17];

				memcpy(name, b->name, 16);
				name[16] = '\0';
				p->threads[thread].start = rel(pc, b->ts);
				if (name[0])
					p->threads[thread].name = ks_profile_intern(p, name);
				break;
			}
			case KS_RAW_THREAD_END: {
				const struct ks_raw_thread_end *e = (const void *)r;
				char name[17];

				memcpy(name, e->name, 16);
				name[16] = '\0';
				p->threads[thread].cpu_ns = e->cpu_ns;
				if (name[0])
					p->threads[thread].name = ks_profile_intern(p, name);
				break;
			}
			case KS_RAW_SAMPLE:
				rc = add_sample(pc, thread, (const void *)r, open, nopen);
				if (rc)
					return rc;
				stats->samples++;
				if (r->flags & KS_RAW_SAMPLE_SLOWED) {
					uint64_t w = 1 + (uint64_t)((const struct ks_raw_sample *)
								    (const void *)r)->overrun;

					stats->slowed_samples++;
					if (w > stats->slowed_max_periods)
						stats->slowed_max_periods = w;
				}
				break;
			case KS_RAW_REGION_PUSH:
			case KS_RAW_PAUSE: {
				const char *name = r->type == KS_RAW_PAUSE ? "[paused]"
						   : ks_raw_string(r, nm->name);
				struct ks_pslice *s = new_slice(pc, thread,
					r->type == KS_RAW_PAUSE ? KS_SLICE_PAUSE : KS_SLICE_REGION,
					name ? name : "", nm->ts, (uint32_t)nopen);
				struct ks_pframe f = { 0 };

				if (!s)
					return -ENOMEM;
				if (nopen == sizeof(open) / sizeof(open[0]))
					break; /* deeper than anyone reads: kept as a slice only */
				open[nopen].slice = (uint32_t)p->n_slices - 1;
				open[nopen].frame = KS_NONE;
				if (r->type == KS_RAW_REGION_PUSH) {
					f.function = s->name;
					f.module = ks_profile_intern(p, "[region]");
					f.file = KS_NONE;
					open[nopen].frame = ks_profile_frame(p, &f);
				}
				nopen++;
				break;
			}
			case KS_RAW_REGION_POP:
			case KS_RAW_RESUME: {
				uint8_t want = r->type == KS_RAW_RESUME ? KS_SLICE_PAUSE
									: KS_SLICE_REGION;

				/* Close the innermost open slice of that kind. */
				for (size_t i = nopen; i-- > 0;) {
					if (p->slices[open[i].slice].kind != want)
						continue;
					p->slices[open[i].slice].end = rel(pc, nm->ts);
					memmove(&open[i], &open[i + 1], (nopen - i - 1) * sizeof(open[0]));
					nopen--;
					break;
				}
				break;
			}
			case KS_RAW_MARK: {
				const char *name = ks_raw_string(r, nm->name);

				if (!new_slice(pc, thread, KS_SLICE_MARK, name ? name : "",
					       nm->ts, (uint32_t)nopen))
					return -ENOMEM;
				break;
			}
			case KS_RAW_RANGE_START: {
				const char *name = ks_raw_string(r, nm->name);
				struct ks_pslice *s = new_slice(pc, thread, KS_SLICE_RANGE,
								name ? name : "", nm->ts,
								(uint32_t)nopen);

				if (!s)
					return -ENOMEM;
				s->id = nm->id;
				s->end = UINT64_MAX; /* closed by its RANGE_END */
				break;
			}
			case KS_RAW_RANGE_END:
				/* May end on another thread: search the process. */
				for (size_t i = p->n_slices; i-- > 0;) {
					struct ks_pslice *s = &p->slices[i];

					if (s->kind == KS_SLICE_RANGE && s->id == nm->id &&
					    s->end == UINT64_MAX &&
					    p->threads[s->thread].process == pc->process) {
						s->end = rel(pc, nm->ts);
						break;
					}
				}
				break;
			case KS_RAW_MPI: {
				const struct ks_raw_mpi *m = (const void *)r;
				char name[33];
				struct ks_pslice *s;

				memcpy(name, m->name, 32);
				name[32] = '\0';
				s = new_slice(pc, thread, KS_SLICE_MPI, name, m->ts_begin,
					      (uint32_t)nopen);
				if (!s)
					return -ENOMEM;
				s->end = rel(pc, m->ts_end);
				s->bytes = m->bytes;
				s->peer = m->peer;
				break;
			}
			default:
				break;
			}
		}
		if (bad) {
			stats->bytes_ignored += bad;
			stats->damaged_files++;
		}
	}
	if (thread == KS_NONE)
		return 0;
	if (rel(pc, last) > p->threads[thread].end)
		p->threads[thread].end = rel(pc, last);
	/* Regions still open when the thread ended end with it. */
	for (size_t i = 0; i < nopen; i++)
		p->slices[open[i].slice].end = p->threads[thread].end;
	if (last > pc->last_ts)
		pc->last_ts = last;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

static uint32_t get_process(struct ks_profile *p, const struct ks_raw_file_header *h,
			    uint64_t origin)
{
	struct ks_pprocess *pr;

	for (size_t i = 0; i < p->n_processes; i++)
		if (p->processes[i].pid == h->pid)
			return (uint32_t)i;
	pr = ks_profile_push(p, processes);
	if (!pr)
		return KS_NONE;
	pr->pid = h->pid;
	pr->ppid = h->ppid;
	pr->rank = h->rank;
	pr->start = h->start_mono_ns > origin ? h->start_mono_ns - origin : 0;
	pr->end = pr->start;
	return (uint32_t)p->n_processes - 1;
}

static int do_file(struct ks_profile *p, const struct ks_raw_file *f,
		   uint64_t origin, struct ks_post_stats *stats, struct ks_err *err)
{
	struct proc_ctx pc;
	struct symtab st;
	struct chunk_ref *refs = NULL;
	size_t nrefs = 0, caprefs = 0, bad = 0;
	const struct ks_raw_rec *r;
	struct ks_raw_iter it;
	int rc;

	memset(&pc, 0, sizeof(pc));
	pc.p = p;
	pc.st = &st;
	pc.origin = origin;
	pc.last_ts = f->hdr->start_mono_ns;
	pc.process = get_process(p, f->hdr, origin);
	if (pc.process == KS_NONE)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (f->hdr->rank >= 0)
		p->processes[pc.process].rank = f->hdr->rank;
	if (f->hdr->cputime_freq)
		p->cputime_freq = f->hdr->cputime_freq;
	if (f->hdr->realtime_freq)
		p->realtime_freq = f->hdr->realtime_freq;
	rc = symtab_init(&st, p, pc.process, stats);
	if (rc)
		return ks_err_set(err, rc, "cannot start libdw");

	/* Pass 1: process records, modules, and the list of chunks. */
	ks_raw_iter_file(f, &it);
	while ((r = ks_raw_next(&it, &bad)) != NULL) {
		switch (r->type) {
		case KS_RAW_MODULE: {
			const struct ks_raw_module *m = (const void *)r;
			const char *path = ks_raw_string(r, m->path);

			if (path && symtab_add_module(&st, m, path) != 0)
				rc = -ENOMEM;
			break;
		}
		case KS_RAW_IMAGE:
			if (symtab_add_image(&st, (const void *)r) != 0)
				rc = -ENOMEM;
			break;
		case KS_RAW_CHUNK: {
			struct chunk_ref *c = ks_profile_grow((void **)&refs, &nrefs, &caprefs,
							      sizeof(*c));
			if (!c) {
				rc = -ENOMEM;
				break;
			}
			c->c = (const void *)r;
			c->order = nrefs;
			break;
		}
		case KS_RAW_CMDLINE: {
			const struct ks_raw_cmdline *c = (const void *)r;
			const char *a = c->args, *end = (const char *)r + r->size;
			char line[4096];
			size_t o = 0;

			for (uint32_t i = 0; i < c->argc && a < end; i++) {
				const char *z = memchr(a, '\0', (size_t)(end - a));

				if (!z)
					break;
				o += (size_t)snprintf(line + o, o < sizeof(line) ? sizeof(line) - o : 0,
						      "%s%s", i ? " " : "", a);
				if (o >= sizeof(line))
					break;
				a = z + 1;
			}
			line[o < sizeof(line) ? o : sizeof(line) - 1] = '\0';
			p->processes[pc.process].command = ks_profile_intern(p, line);
			break;
		}
		case KS_RAW_COUNTER: {
			const struct ks_raw_counter *c = (const void *)r;
			struct ks_pcounter *pcn = ks_profile_push(p, counters);

			if (!pcn) {
				rc = -ENOMEM;
				break;
			}
			pcn->process = pc.process;
			pcn->kind = c->kind;
			pcn->ts = rel(&pc, c->ts);
			pcn->value = c->value;
			if (c->ts > pc.last_ts)
				pc.last_ts = c->ts;
			break;
		}
		case KS_RAW_COUNTER_INFO: {
			const struct ks_raw_counter_info *ci = (const void *)r;

			if (p->n_counter_names == 0)
				for (uint32_t i = 0; i < ci->ncounters && i < KS_RAW_MAX_COUNTERS; i++) {
					char name[320], why[256], cname[33];
					uint32_t *slot = ks_profile_push(p, counter_names);

					if (!slot) {
						rc = -ENOMEM;
						break;
					}
					memcpy(cname, ci->names[i], 32);
					cname[32] = '\0';
					/* An unsupported counter keeps why in its name:
					 * the reports show it, and no schema change is
					 * needed to carry it. */
					if ((ci->supported_mask >> i) & 1)
						snprintf(name, sizeof(name), "%s", cname);
					else if (r->size >= sizeof(*ci) && ci->error[i] > 0) {
						ks_counter_why(ks_counter_find(cname), ci->error[i],
							       why, sizeof(why));
						snprintf(name, sizeof(name), "%s (not supported: %s)",
							 cname, why);
					} else
						snprintf(name, sizeof(name), "%s (not supported)", cname);
					*slot = ks_profile_intern(p, name);
				}
			break;
		}
		case KS_RAW_DROPPED:
			p->dropped_samples += ((const struct ks_raw_dropped *)r)->samples;
			break;
		case KS_RAW_END: {
			const struct ks_raw_end *e = (const void *)r;

			p->processes[pc.process].end_reason = e->reason;
			p->processes[pc.process].end_status = e->status;
			if (e->ts > pc.last_ts)
				pc.last_ts = e->ts;
			break;
		}
		default:
			break;
		}
		if (rc)
			break;
	}
	if (bad) {
		stats->damaged_files++;
		stats->bytes_ignored += bad;
	}
	if (!rc && dwfl_report_end(st.dwfl, NULL, NULL) != 0)
		rc = -EINVAL;

	/* Pass 2: each thread's chunks in order. */
	if (!rc && nrefs) {
		qsort(refs, nrefs, sizeof(*refs), chunk_cmp);
		for (size_t i = 0; i < nrefs && !rc;) {
			size_t j = i;

			while (j < nrefs && refs[j].c->tid == refs[i].c->tid)
				j++;
			rc = do_thread(&pc, refs + i, j - i, stats);
			i = j;
		}
	}
	if (!rc) {
		struct ks_pprocess *pr = &p->processes[pc.process];

		if (rel(&pc, pc.last_ts) > pr->end)
			pr->end = rel(&pc, pc.last_ts);
		/* Ranges never ended end with their thread. */
		for (size_t i = 0; i < p->n_slices; i++)
			if (p->slices[i].end == UINT64_MAX)
				p->slices[i].end = p->threads[p->slices[i].thread].end;
	}
	free(refs);
	symtab_free(&st);
	if (rc)
		return ks_err_set(err, rc, "%s: %s", f->path,
				  rc == -ENOMEM ? "out of memory" : "cannot read its modules");
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ks_post_build(const char *run_dir, struct ks_profile *p,
		  struct ks_post_stats *stats, struct ks_err *err)
{
	char dir[PATH_MAX];
	struct ks_raw_file *files = NULL;
	char **names = NULL;
	size_t n = 0, cap = 0, nfiles = 0;
	uint64_t origin = UINT64_MAX;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	memset(stats, 0, sizeof(*stats));
	snprintf(dir, sizeof(dir), "%s/raw", run_dir);
	d = opendir(dir);
	if (!d)
		return ks_err_set(err, -errno, "no raw samples in '%s': %s", run_dir,
				  strerror(errno));
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char **slot;

		if (len < 7 || strcmp(de->d_name + len - 6, ".ksraw") != 0)
			continue;
		slot = ks_profile_grow((void **)&names, &n, &cap, sizeof(*slot));
		if (!slot || !(*slot = strdup(de->d_name))) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			break;
		}
	}
	closedir(d);
	if (!rc && n == 0)
		rc = ks_err_set(err, -ENOENT, "the program wrote no samples to '%s' "
				"(did it run at all?)", dir);
	if (rc)
		goto out;
	qsort(names, n, sizeof(*names), name_cmp);
	files = calloc(n, sizeof(*files));
	if (!files) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX + 256];
		struct ks_err e;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (ks_raw_open(path, &files[nfiles], &e) != 0) {
			/* A file too short for its header: the process died
			 * at once.  Counted, not fatal. */
			stats->damaged_files++;
			continue;
		}
		if (files[nfiles].hdr->start_mono_ns < origin)
			origin = files[nfiles].hdr->start_mono_ns;
		nfiles++;
	}
	if (nfiles == 0) {
		rc = ks_err_set(err, -EINVAL, "no readable raw sample file in '%s'", dir);
		goto out;
	}
	/* Files in order of their start, so a process's images (exec) come
	 * in the order they ran. */
	for (size_t i = 1; i < nfiles; i++)
		for (size_t j = i; j > 0 && files[j].hdr->start_mono_ns <
					    files[j - 1].hdr->start_mono_ns; j--) {
			struct ks_raw_file t = files[j];

			files[j] = files[j - 1];
			files[j - 1] = t;
		}
	for (size_t i = 0; i < nfiles && !rc; i++) {
		rc = do_file(p, &files[i], origin, stats, err);
		stats->files++;
	}
	if (!rc) {
		char buf[64];

		snprintf(buf, sizeof(buf), "%" PRIu64,
			 files[0].hdr->start_real_ns);
		ks_profile_meta(p, "start_realtime_ns", buf);
		ks_profile_meta(p, "hostname", files[0].hdr->hostname);
		snprintf(buf, sizeof(buf), "%u", p->cputime_freq);
		ks_profile_meta(p, "cputime_freq", buf);
		snprintf(buf, sizeof(buf), "%u", p->realtime_freq);
		ks_profile_meta(p, "realtime_freq", buf);
		snprintf(buf, sizeof(buf), "%s",
			 files[0].hdr->flags & KS_RAW_F_FRAME_POINTERS ? "frame pointers"
								       : "libunwind");
		ks_profile_meta(p, "unwinder", buf);
		snprintf(buf, sizeof(buf), "%" PRIu64, p->dropped_samples);
		ks_profile_meta(p, "dropped_samples", buf);
		if (stats->slowed_samples) {
			snprintf(buf, sizeof(buf), "%" PRIu64, stats->slowed_samples);
			ks_profile_meta(p, "realtime_slowed_samples", buf);
			snprintf(buf, sizeof(buf), "%" PRIu64, stats->slowed_max_periods);
			ks_profile_meta(p, "realtime_slowed_max_periods", buf);
		}
	}
out:
	for (size_t i = 0; i < nfiles; i++)
		ks_raw_close(&files[i]);
	free(files);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}
