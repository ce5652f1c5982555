/*
 * KS_RAW_MODULE records: which ELF objects are mapped where, so that the
 * addresses in samples can be turned into functions and lines afterwards.
 * The list comes from dl_iterate_phdr: once at start, whenever the
 * loader's count of added objects changes (the writer thread polls it every
 * 100 ms), before every dlclose (rt_wrap.c), and in the final flush.
 *
 * dlopen is deliberately not wrapped: glibc's dlopen searches the calling
 * object's DT_RUNPATH and expands $ORIGIN relative to it, and it finds the
 * caller from its return address, so a wrapper would make every dlopen
 * look as if libkscope.so called it and change which file the program
 * loads.  A module loaded since the last poll is still found when it is
 * unloaded (dlclose scans first) or at the end.  An object is written once, identified by its load
 * address, extent and path; a different object later loaded at the same
 * place is new and written again, with its own timestamp.
 *
 * Normal context only: dl_iterate_phdr takes the loader's lock.
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "rt_int.h"

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* mod_lock held */
static bool mod_seen(const struct ks_rt_modseen *m)
{
	for (size_t i = 0; i < ks_rt.nmods; i++) {
		const struct ks_rt_modseen *o = &ks_rt.mods[i];

		if (o->base == m->base && o->low == m->low && o->high == m->high &&
		    o->name_hash == m->name_hash)
			return true;
	}
	return false;
}

/* mod_lock held */
static int mod_add(const struct ks_rt_modseen *m)
{
	if (ks_rt.nmods == ks_rt.capmods) {
		size_t cap = ks_rt.capmods ? ks_rt.capmods * 2 : 64;
		struct ks_rt_modseen *n = realloc(ks_rt.mods, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		ks_rt.mods = n;
		ks_rt.capmods = cap;
	}
	ks_rt.mods[ks_rt.nmods++] = *m;
	return 0;
}

static void module_write(const struct ks_rt_modseen *m, const char *path)
{
	union {
		struct ks_raw_module r;
		unsigned char bytes[sizeof(struct ks_raw_module) + PATH_MAX + 8];
	} u;
	size_t len = strnlen(path, PATH_MAX - 1);
	uint32_t size = KS_RAW_ALIGN((uint32_t)(sizeof(struct ks_raw_module) + len + 1));

	memset(&u, 0, size);
	u.r.h.type = KS_RAW_MODULE;
	u.r.h.size = size;
	u.r.base = m->base;
	u.r.low = m->low;
	u.r.high = m->high;
	u.r.ts = ks_rt_now();
	memcpy(u.r.path, path, len);
	ks_rt_file_write(&u, size);
}

/* The extent of the vdso's ELF image to copy: its PT_LOAD extent, and its
 * section headers (which name .dynsym for libelf) when they lie inside
 * the pages the kernel mapped for it, as they do: the kernel maps the
 * whole image file.  0 if its header looks wrong. */
static size_t vdso_size(const struct ks_rt_modseen *m)
{
	const ElfW(Ehdr) *e = (const void *)(uintptr_t)m->low;
	size_t page = 4096, load = (size_t)(m->high - m->low), mapped, sh;

	if (memcmp(e->e_ident, ELFMAG, SELFMAG) != 0 || load < sizeof(*e))
		return 0;
	mapped = (load + page - 1) / page * page;
	sh = (size_t)e->e_shoff + (size_t)e->e_shnum * e->e_shentsize;
	return e->e_shoff && sh > load && sh <= mapped ? sh : load;
}

/* A KS_RAW_IMAGE record of the vdso (post.c names its functions from
 * it); nothing if memory is short: the vdso then stays unnamed. */
static void vdso_write(const struct ks_rt_modseen *m)
{
	/* Only where the image starts at its mapping's lowest address, as
	 * the kernel lays the vdso out: then m->low is its ELF header. */
	size_t n = m->low == getauxval(AT_SYSINFO_EHDR) ? vdso_size(m) : 0;
	uint32_t size;
	struct ks_raw_image *r;

	if (n == 0 || n > (64u << 20))
		return;
	size = KS_RAW_ALIGN((uint32_t)(sizeof(*r) + n));
	r = calloc(1, size);
	if (!r)
		return;
	r->h.type = KS_RAW_IMAGE;
	r->h.size = size;
	r->low = m->low;
	r->size = n;
	memcpy(r->data, (const void *)(uintptr_t)m->low, n);
	ks_rt_file_write(r, size);
	free(r);
}

static int module_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct ks_rt_modseen m;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	char resolved[PATH_MAX];
	const char *path;
	bool any = false;

	(void)size;
	(void)data;
	m.base = info->dlpi_addr;
	m.low = UINT64_MAX;
	m.high = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < m.low)
			m.low = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > m.high)
			m.high = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		any = true;
	}
	if (!any)
		return 0;
	if (m.low == getauxval(AT_SYSINFO_EHDR) || strncmp(name, "linux-vdso", 10) == 0)
		path = "[vdso]";
	else if (name[0] == '\0')
		path = ks_rt.exe_path;
	else if (realpath(name, resolved))
		path = resolved;
	else
		path = name;
	m.name_hash = hash_str(path);
	if (mod_seen(&m) || mod_add(&m) < 0)
		return 0;
	module_write(&m, path);
	if (strcmp(path, "[vdso]") == 0)
		vdso_write(&m);
	return 0;
}

void ks_rt_modules_scan(void)
{
	int saved = errno;
	int lk;

	if (ks_rt.fd < 0)
		return;
	/* The final flush keeps the lock for good: do not wait for it. */
	while ((lk = ks_rt_file_lock(100)) == 0)
		if (atomic_load(&ks_rt.state) == KS_RT_FINISHED)
			goto out;
	pthread_mutex_lock(&ks_rt.mod_lock);
	dl_iterate_phdr(module_cb, NULL);
	pthread_mutex_unlock(&ks_rt.mod_lock);
	if (lk == 1)
		ks_rt_file_unlock();
out:
	errno = saved;
}

static int adds_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *adds = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs))
		*adds = info->dlpi_adds;
	return 1; /* the counter is the same in every entry */
}

void ks_rt_modules_poll(void)
{
	unsigned long long adds = 0;

	dl_iterate_phdr(adds_cb, &adds);
	if (adds != ks_rt.mod_adds) {
		ks_rt.mod_adds = adds;
		ks_rt_modules_scan();
	}
}

void ks_rt_modules_reset(void)
{
	pthread_mutex_init(&ks_rt.mod_lock, NULL);
	ks_rt.nmods = 0;
}
