/*
 * The modules loaded in the process and their data symbols: which global
 * variable an address belongs to (a data object's name and extent), and
 * which file and file address a code address has (for the stacks, which
 * kscope then names with libdw).  The modules come from dl_iterate_phdr;
 * a module's symbols from its ELF file's .symtab (or .dynsym when it is
 * stripped), read with a mapping of the file.
 *
 * Written by hand rather than with libelf: this code runs inside the
 * program under test, which must not get a library (and its symbols)
 * it did not ask for; only 64-bit ELF symbol tables are read, nothing
 * else (docs/architecture.md).
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_int.h"

struct sym {
	uintptr_t start;
	size_t size;
	const char *name;          /* in the file's mapping */
};

struct mod {
	uintptr_t bias;            /* load address less file address */
	uintptr_t lo, hi;          /* its loaded segments */
	char *path;
	struct sym *syms;          /* data symbols by start, once read */
	size_t nsyms;
	bool syms_read;
};

static struct rt_lock sym_lock;
static struct mod *mods;
static size_t nmods, capmods;
static unsigned long long seen_adds = ~0ULL, seen_subs = ~0ULL;

void rt_sym_lock(void)
{
	rt_lock_take(&sym_lock);
}

void rt_sym_unlock(void)
{
	rt_lock_give(&sym_lock);
}

/* ------------------------------------------------------------------ */
/* The module list                                                     */
/* ------------------------------------------------------------------ */

static char *self_exe(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);

	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return rt_strdup(buf);
}

static struct mod *mod_by_path(const char *path, uintptr_t bias)
{
	for (size_t i = 0; i < nmods; i++)
		if (mods[i].bias == bias && !strcmp(mods[i].path, path))
			return &mods[i];
	return NULL;
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	const char *name = info->dlpi_name;
	char *exe = NULL;
	struct mod *m;

	(void)size;
	(void)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (lo >= hi)
		return 0;
	if (!name || !name[0]) {
		/* The first entry is the program itself. */
		if (nmods || !(exe = self_exe()))
			return 0;
		name = exe;
	}
	if (name[0] != '/') {
		/* linux-vdso.so.1: no file. */
		return 0;
	}
	if ((m = mod_by_path(name, info->dlpi_addr))) {
		m->lo = lo;
		m->hi = hi;
		rt_free(exe, exe ? strlen(exe) + 1 : 0);
		return 0;
	}
	if (nmods == capmods) {
		size_t ncap = capmods ? capmods * 2 : 32;
		struct mod *n = rt_zalloc(ncap * sizeof(*n));

		if (!n)
			return 1;
		if (nmods)
			memcpy(n, mods, nmods * sizeof(*n));
		rt_free(mods, capmods * sizeof(*mods));
		mods = n;
		capmods = ncap;
	}
	m = &mods[nmods];
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->lo = lo;
	m->hi = hi;
	m->path = exe ? exe : rt_strdup(name);
	if (m->path)
		nmods++;
	return 0;
}

static int gen_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *g = arg;

	(void)size;
	g[0] = info->dlpi_adds;
	g[1] = info->dlpi_subs;
	return 1;
}

/* Brings the list up to date if modules were loaded or unloaded since
 * (symbol tables already read are kept). */
static void mods_refresh(void)
{
	unsigned long long g[2] = { 0, 0 };

	dl_iterate_phdr(gen_cb, g);
	if (g[0] == seen_adds && g[1] == seen_subs)
		return;
	seen_adds = g[0];
	seen_subs = g[1];
	dl_iterate_phdr(phdr_cb, NULL);
}

static struct mod *mod_of(uintptr_t a)
{
	for (size_t i = 0; i < nmods; i++)
		if (a >= mods[i].lo && a < mods[i].hi)
			return &mods[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Symbol tables                                                       */
/* ------------------------------------------------------------------ */

static void sym_sift(struct sym *s, size_t root, size_t n)
{
	size_t child;

	while ((child = 2 * root + 1) < n) {
		struct sym tmp;

		if (child + 1 < n && s[child + 1].start > s[child].start)
			child++;
		if (s[root].start >= s[child].start)
			return;
		tmp = s[root];
		s[root] = s[child];
		s[child] = tmp;
		root = child;
	}
}

/* Heapsort: qsort may allocate, and the runtime does not call malloc. */
static void sym_sort(struct sym *s, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sym_sift(s, i, n);
	for (size_t i = n; i-- > 1;) {
		struct sym tmp = s[0];

		s[0] = s[i];
		s[i] = tmp;
		sym_sift(s, 0, i);
	}
}

/* Whether [off, off + len) lies inside a file of size size. */
static bool in_file(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/* Reads m's data symbols (STT_OBJECT with a size) from its file.  The
 * mapping stays: the names point into it. */
static void syms_read(struct mod *m)
{
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh, *tab = NULL;
	struct stat st;
	unsigned char *f;
	size_t n = 0, cap;
	int fd;

	m->syms_read = true;
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(*eh)) {
		close(fd);
		return;
	}
	f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f == MAP_FAILED)
		return;
	eh = (const Elf64_Ehdr *)(void *)f;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_file(eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr), (uint64_t)st.st_size))
		goto unmap;
	sh = (const Elf64_Shdr *)(const void *)(f + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == SHT_SYMTAB || (sh[i].sh_type == SHT_DYNSYM && !tab))
			tab = &sh[i];
	if (!tab || tab->sh_entsize != sizeof(Elf64_Sym) || tab->sh_link >= eh->e_shnum ||
	    !in_file(tab->sh_offset, tab->sh_size, (uint64_t)st.st_size) ||
	    !in_file(sh[tab->sh_link].sh_offset, sh[tab->sh_link].sh_size, (uint64_t)st.st_size))
		goto unmap;
	{
		const Elf64_Sym *sy = (const Elf64_Sym *)(const void *)(f + tab->sh_offset);
		const char *str = (const char *)f + sh[tab->sh_link].sh_offset;
		size_t nsy = tab->sh_size / sizeof(*sy), strsz = sh[tab->sh_link].sh_size;

		cap = 0;
		for (size_t i = 0; i < nsy; i++)
			if (ELF64_ST_TYPE(sy[i].st_info) == STT_OBJECT && sy[i].st_size &&
			    sy[i].st_shndx != SHN_UNDEF && sy[i].st_name < strsz)
				cap++;
		if (!cap || !(m->syms = rt_zalloc(cap * sizeof(*m->syms))))
			goto unmap;
		for (size_t i = 0; i < nsy; i++) {
			if (ELF64_ST_TYPE(sy[i].st_info) != STT_OBJECT || !sy[i].st_size ||
			    sy[i].st_shndx == SHN_UNDEF || sy[i].st_name >= strsz)
				continue;
			/* A name must end inside the table. */
			if (!memchr(str + sy[i].st_name, '\0', strsz - sy[i].st_name))
				continue;
			m->syms[n].start = m->bias + sy[i].st_value;
			m->syms[n].size = sy[i].st_size;
			m->syms[n].name = str + sy[i].st_name;
			n++;
		}
	}
	sym_sort(m->syms, n);
	m->nsyms = n;
	return;
unmap:
	munmap(f, (size_t)st.st_size);
}

static const struct sym *sym_at(struct mod *m, uintptr_t a)
{
	size_t lo = 0, hi = m->nsyms;

	if (!m->syms_read)
		syms_read(m);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->syms[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo: the first symbol above a; the ones below may nest (a
	 * variable inside an array symbol): try a few. */
	for (size_t k = lo, tries = 0; k-- > 0 && tries < 8; tries++)
		if (a - m->syms[k].start < m->syms[k].size)
			return &m->syms[k];
	return NULL;
}

bool rt_sym_data(uintptr_t a, uintptr_t *start, size_t *size, const char **name,
		 const char **obj)
{
	const struct sym *s = NULL;
	struct mod *m;

	rt_lock_take(&sym_lock);
	if (!(m = mod_of(a))) {
		mods_refresh();
		m = mod_of(a);
	}
	if (m && (s = sym_at(m, a))) {
		*start = s->start;
		*size = s->size;
		*name = s->name;
		*obj = m->path;
	}
	rt_lock_give(&sym_lock);
	return s != NULL;
}

bool rt_sym_module(uintptr_t pc, const char **path, uintptr_t *off)
{
	struct mod *m;

	rt_lock_take(&sym_lock);
	if (!(m = mod_of(pc))) {
		mods_refresh();
		m = mod_of(pc);
	}
	if (m) {
		*path = m->path;
		*off = pc - m->bias;
	}
	rt_lock_give(&sym_lock);
	return m != NULL;
}
