/*
 * The dynamic section and the symbol tables of an ELF file, read with
 * libelf (elfdeps.h), and the loader's search for a needed library.
 */
#include "elfdeps.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

static int add_needed(struct ks_elfdeps *d, const char *name)
{
	char **v = realloc(d->needed, (d->nneeded + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	d->needed = v;
	if (!(v[d->nneeded] = strdup(name)))
		return -ENOMEM;
	d->nneeded++;
	return 0;
}

static int read_dynamic(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct ks_elfdeps *d)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const char *rpath = NULL, *runpath = NULL;
	size_t n;
	int rc;

	if (!data || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Dyn dyn;
		const char *name;

		if (!gelf_getdyn(data, (int)i, &dyn))
			continue;
		if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH && dyn.d_tag != DT_RUNPATH)
			continue;
		name = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
		if (!name)
			continue;
		if (dyn.d_tag == DT_NEEDED) {
			if ((rc = add_needed(d, name)))
				return rc;
		} else if (dyn.d_tag == DT_RPATH) {
			rpath = name;
		} else {
			runpath = name;
		}
	}
	if (runpath || rpath) {
		d->runpath = strdup(runpath ? runpath : rpath);
		d->runpath_is_rpath = !runpath;
		if (!d->runpath)
			return -ENOMEM;
	}
	return 0;
}

static void read_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh,
			 const char *const *syms, struct ks_elfdeps *d)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize || !syms)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || !sym.st_name)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || strncmp(name, "__", 2))
			continue; /* every name asked about starts so: a quick skip */
		for (unsigned k = 0; k < KS_ELFDEPS_MAX_SYMS && syms[k]; k++) {
			if (strcmp(name, syms[k]))
				continue;
			if (sym.st_shndx == SHN_UNDEF)
				d->refers |= 1u << k;
			else
				d->defines |= 1u << k;
		}
	}
}

int ks_elfdeps_read(const char *path, const char *const *syms, struct ks_elfdeps *out,
		    struct ks_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return ks_err_set(err, -errno, "%s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return ks_err_set(err, -ENOEXEC, "%s is not an ELF file", path);
	}
	while (!rc && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNAMIC)
			rc = read_dynamic(elf, scn, &sh, out);
		else if (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB)
			read_symbols(elf, scn, &sh, syms, out);
	}
	elf_end(elf);
	close(fd);
	if (rc)
		return ks_err_set(err, rc, "out of memory");
	return 0;
}

void ks_elfdeps_free(struct ks_elfdeps *d)
{
	for (size_t i = 0; i < d->nneeded; i++)
		free(d->needed[i]);
	free(d->needed);
	free(d->runpath);
	memset(d, 0, sizeof(*d));
}

const char *ks_elfdeps_needs(const struct ks_elfdeps *d, const char *prefix)
{
	size_t n = strlen(prefix);

	for (size_t i = 0; i < d->nneeded; i++)
		if (!strncmp(d->needed[i], prefix, n))
			return d->needed[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The loader's search                                                 */
/* ------------------------------------------------------------------ */

/* dir/name when that is a regular file; malloc'd.  dir may hold $ORIGIN
 * or ${ORIGIN}, the directory of the object that needs the library. */
static char *try_dir(const char *dir, size_t len, const char *origin, const char *name)
{
	char buf[PATH_MAX * 2];
	size_t o = 0;
	struct stat st;

	for (size_t i = 0; i < len && o < sizeof(buf) - 1; i++) {
		const char *tok = NULL;
		size_t skip = 0;

		if (!strncmp(dir + i, "$ORIGIN", 7) && i + 7 <= len) {
			tok = origin;
			skip = 7;
		} else if (!strncmp(dir + i, "${ORIGIN}", 9) && i + 9 <= len) {
			tok = origin;
			skip = 9;
		}
		if (tok) {
			size_t tl = strlen(tok);

			if (o + tl >= sizeof(buf) - 1)
				return NULL;
			memcpy(buf + o, tok, tl);
			o += tl;
			i += skip - 1;
		} else {
			buf[o++] = dir[i];
		}
	}
	if (o == 0 || o + 1 + strlen(name) >= sizeof(buf))
		return NULL;
	buf[o++] = '/';
	memcpy(buf + o, name, strlen(name) + 1);
	if (stat(buf, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	return strdup(buf);
}

/* The first dir of a colon-separated list holding name. */
static char *try_list(const char *list, const char *origin, const char *name)
{
	const char *p = list;

	while (p && *p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *hit = len ? try_dir(p, len, origin, name) : NULL;

		if (hit)
			return hit;
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

char *ks_elfdeps_resolve(const char *path, const struct ks_elfdeps *d, const char *name)
{
	static const char sys[] = "/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:"
				  "/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu:"
				  "/lib64:/usr/lib64:/lib:/usr/lib:/usr/local/lib";
	char origin[PATH_MAX], *slash, *hit = NULL;
	const char *env = getenv("LD_LIBRARY_PATH");

	if (strchr(name, '/'))
		return strdup(name);
	if (!realpath(path, origin))
		snprintf(origin, sizeof(origin), "%s", path);
	slash = strrchr(origin, '/');
	if (slash)
		*(slash == origin ? slash + 1 : slash) = '\0';
	if (d->runpath && d->runpath_is_rpath)
		hit = try_list(d->runpath, origin, name);
	if (!hit && env)
		hit = try_list(env, origin, name);
	if (!hit && d->runpath && !d->runpath_is_rpath)
		hit = try_list(d->runpath, origin, name);
	if (!hit)
		hit = try_list(sys, origin, name);
	return hit;
}
