/*
 * kscope instrument --rewrite (instr.h; docs/instrument.md,
 * "Rewriting"): a copy of a program whose functions are patched in the
 * file, so that running it needs no analysis and no patching.
 *
 * What changes in the copy, and nothing else:
 *   - a new loadable segment (read, execute) past the program's end, in
 *     memory and in the file: struct ks_instr_rw_head and its tables,
 *     the program's dynamic string table with the runtime's path added,
 *     and the trampolines; its program header is a PT_NOTE's, reused
 *     (the notes stay in the file and in their sections; only that
 *     header stops pointing at them);
 *   - each patched function's first five bytes: a jmp to its trampoline
 *     (the relocation is the runtime's own, ks_instr_stub_write, with the
 *     link-time addresses: the segment moves with the program);
 *   - the dynamic section: every entry one slot down (GNU ld leaves spare
 *     DT_NULL slots), DT_NEEDED of the runtime first (so that it comes
 *     first in the lookup order, as LD_PRELOAD would put it), DT_STRTAB
 *     and DT_STRSZ pointing at the new string table.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instr.h"

#define PAGE 4096u

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* The whole file at path, malloc'd. */
static int slurp(const char *path, uint8_t **buf, size_t *len, mode_t *mode, struct ks_err *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	*buf = NULL;
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return ks_err_set(err, -EINVAL, "%s: not a regular ELF file", path);
	}
	*len = (size_t)st.st_size;
	if (mode)
		*mode = st.st_mode & 07777;
	if (!(*buf = malloc(*len))) {
		close(fd);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	while (got < *len) {
		ssize_t n = read(fd, *buf + got, *len - got);

		if (n <= 0) {
			close(fd);
			free(*buf);
			*buf = NULL;
			return ks_err_set(err, -EIO, "cannot read %s: %s", path,
					  n ? strerror(errno) : "it got shorter");
		}
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

/* The program headers of the ELF file in buf, bound-checked. */
static const Elf64_Phdr *phdrs(const uint8_t *buf, size_t len, size_t *n)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > len || eh->e_phoff % 8 ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > len - eh->e_phoff)
		return NULL;
	*n = eh->e_phnum;
	return (const Elf64_Phdr *)(buf + eh->e_phoff);
}

/* The file offset of [vaddr, vaddr+n) in a PT_LOAD's file bytes, or -1. */
static int64_t file_off(const Elf64_Phdr *ph, size_t nph, uint64_t vaddr, uint64_t n, size_t len)
{
	for (size_t i = 0; i < nph; i++) {
		const Elf64_Phdr *p = &ph[i];

		if (p->p_type == PT_LOAD && vaddr >= p->p_vaddr && n <= p->p_filesz &&
		    vaddr - p->p_vaddr <= p->p_filesz - n && p->p_offset + p->p_filesz <= len)
			return (int64_t)(p->p_offset + (vaddr - p->p_vaddr));
	}
	return -1;
}

int ks_instr_rw_read(const char *path, uint8_t **buf, size_t *buflen, struct ks_instr_rw *rw,
		     bool *pie, struct ks_err *err)
{
	size_t len, nph;
	const Elf64_Phdr *ph;
	struct stat st;
	int rc, fd = open(path, O_RDONLY | O_CLOEXEC);
	void *m;

	*buf = NULL;
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -ENOENT;
	}
	len = (size_t)st.st_size;
	m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return ks_err_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
	*buf = m;
	*buflen = len;
	if (!(ph = phdrs(*buf, len, &nph)))
		goto none;
	*pie = ((const Elf64_Ehdr *)*buf)->e_type == ET_DYN;
	for (size_t i = 0; i < nph; i++) {
		if (ph[i].p_type != PT_LOAD || ph[i].p_offset > len ||
		    ph[i].p_filesz > len - ph[i].p_offset)
			continue;
		rc = ks_instr_rw_parse(*buf + ph[i].p_offset, ph[i].p_filesz, rw, err);
		if (rc == 0)
			return 0;
		if (rc != -ENOENT) {
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "%s", err->msg);
			munmap(*buf, len);
			*buf = NULL;
			return ks_err_set(err, rc, "%s: %s", path, msg);
		}
	}
none:
	munmap(*buf, len);
	*buf = NULL;
	return -ENOENT;
}

/* A growing byte buffer: the new segment. */
struct seg {
	uint8_t *b;
	size_t n, cap;
};

static uint64_t seg_put(struct seg *s, const void *p, size_t n, size_t align)
{
	size_t at = (size_t)align_up(s->n, align);

	if (at + n > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		uint8_t *b;

		while (cap < at + n)
			cap *= 2;
		if (!(b = realloc(s->b, cap)))
			return UINT64_MAX;
		memset(b + s->cap, 0, cap - s->cap);
		s->b = b;
		s->cap = cap;
	}
	if (p)
		memcpy(s->b + at, p, n);
	s->n = at + n;
	return at;
}

int ks_instr_rewrite(const char *path, const struct ks_instr_image *img, const char *out,
		     const char *runtime, char *const *kargv, size_t *npatched,
		     struct ks_err *err)
{
	uint8_t *buf = NULL;
	size_t len = 0, nph, ndyn = 0, used = 0;
	mode_t mode = 0755;
	Elf64_Phdr *ph;
	Elf64_Dyn *dyn = NULL;
	struct seg sg = { 0 };
	struct ks_instr_rw_head head = { .dynsym = img->symtab && !strcmp(img->symtab, ".dynsym") };
	uint64_t V = 0, F, strtab = 0, strsz = 0, dynstr_at, rt_off, tramp_at, names_at;
	int64_t strtab_off;
	int note = -1, last_load = -1, fd = -1, rc;
	uint32_t *ids = NULL;       /* per function of img: its id, or UINT32_MAX */
	uint32_t n = 0;

	*npatched = 0;
	if ((rc = slurp(path, &buf, &len, &mode, err)))
		return rc;
	if (!(ph = (Elf64_Phdr *)(uintptr_t)phdrs(buf, len, &nph))) {
		rc = ks_err_set(err, -ENOEXEC, "%s: not a 64-bit x86-64 ELF program", path);
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		if (ph[i].p_type == PT_LOAD) {
			last_load = (int)i;
			if (ph[i].p_vaddr + ph[i].p_memsz > V)
				V = ph[i].p_vaddr + ph[i].p_memsz;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			if (ph[i].p_offset > len || ph[i].p_filesz > len - ph[i].p_offset ||
			    ph[i].p_offset % 8) {
				rc = ks_err_set(err, -EINVAL, "%s: its dynamic section is out of the "
						"file", path);
				goto out;
			}
			dyn = (Elf64_Dyn *)(buf + ph[i].p_offset);
			ndyn = ph[i].p_filesz / sizeof(*dyn);
		}
	}
	for (size_t i = (size_t)(last_load + 1); i < nph && note < 0; i++)
		if (ph[i].p_type == PT_NOTE)
			note = (int)i;
	if (!dyn) {
		rc = ks_err_set(err, -ENOEXEC, "%s: not dynamically linked", path);
		goto out;
	}
	if (note < 0) {
		rc = ks_err_set(err, -ENOSPC, "%s: no program header to reuse for kscope's segment "
				"(a PT_NOTE after the loadable segments)", path);
		goto out;
	}
	while (used < ndyn && dyn[used].d_tag != DT_NULL) {
		if (dyn[used].d_tag == DT_STRTAB)
			strtab = dyn[used].d_un.d_ptr;
		else if (dyn[used].d_tag == DT_STRSZ)
			strsz = dyn[used].d_un.d_val;
		used++;
	}
	if (used + 2 > ndyn) {
		rc = ks_err_set(err, -ENOSPC, "%s: no spare slot in its dynamic section for "
				"kscope's runtime (its linker left none)", path);
		goto out;
	}
	strtab_off = file_off(ph, nph, strtab, strsz, len);
	if (!strtab || !strsz || strtab_off < 0) {
		rc = ks_err_set(err, -EINVAL, "%s: its dynamic string table is not in the file",
				path);
		goto out;
	}
	V = align_up(V, PAGE);
	F = align_up(len, PAGE);

	/* The segment: head, tables, names, argv, string table, trampolines. */
	ids = malloc((img->nfuncs ? img->nfuncs : 1) * sizeof(*ids));
	if (!ids || seg_put(&sg, &head, sizeof(head), 8) == UINT64_MAX) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < img->nfuncs; i++)
		ids[i] = img->funcs[i].patch ? n++ : UINT32_MAX;
	head.funcs = seg_put(&sg, NULL, (size_t)n * sizeof(struct ks_instr_rw_func), 8);
	names_at = sg.n;
	head.names = names_at;
	for (size_t i = 0; i < img->nfuncs; i++) {
		const struct ks_instr_func *f = &img->funcs[i];
		struct ks_instr_rw_func r = { .addr = f->addr, .size = f->size, .ninsns = f->ninsns,
					      .moved_len = f->moved_len };

		if (ids[i] == UINT32_MAX)
			continue;
		r.name = (uint32_t)(seg_put(&sg, f->name, strlen(f->name) + 1, 1) - names_at);
		memcpy(r.bytes, f->bytes, sizeof(r.bytes));
		memcpy(sg.b + head.funcs + (size_t)ids[i] * sizeof(r), &r, sizeof(r));
	}
	head.runtime = seg_put(&sg, runtime, strlen(runtime) + 1, 1) - names_at;
	head.names_len = sg.n - names_at;
	head.argv = sg.n;
	for (char *const *a = kargv; *a; a++)
		seg_put(&sg, *a, strlen(*a) + 1, 1);
	seg_put(&sg, "", 1, 1);
	head.argv_len = sg.n - head.argv;
	dynstr_at = seg_put(&sg, buf + strtab_off, strsz, 1);
	rt_off = strsz;
	seg_put(&sg, runtime, strlen(runtime) + 1, 1);
	tramp_at = seg_put(&sg, NULL, KS_INSTR_TRAMP_HEAD + (size_t)n * KS_INSTR_STUB_SIZE, 16);
	if (tramp_at == UINT64_MAX || head.funcs == UINT64_MAX) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	head.tramp = tramp_at;
	head.nfuncs = n;
	head.size = sg.n;
	memcpy(head.magic, KS_INSTR_RW_MAGIC, 16);
	memcpy(sg.b, &head, sizeof(head));

	/* The trampolines and the jumps to them. */
	for (size_t i = 0; i < img->nfuncs; i++) {
		const struct ks_instr_func *f = &img->funcs[i];
		uint64_t stub = tramp_at + KS_INSTR_TRAMP_HEAD + (uint64_t)ids[i] * KS_INSTR_STUB_SIZE;
		int64_t at, d;
		int32_t d32;
		struct ks_err e;

		if (ids[i] == UINT32_MAX)
			continue;
		at = file_off(ph, nph, f->addr, f->moved_len, len);
		d = (int64_t)((V + stub + 4) - (f->addr + 5));
		d32 = (int32_t)d;
		if (at < 0 || memcmp(buf + at, f->bytes, f->moved_len) != 0 || d != d32 ||
		    ks_instr_stub_write(f, ids[i], 0, sg.b + stub, V + stub, V + tramp_at, &e)) {
			rc = ks_err_set(err, -ERANGE, "%s: %s cannot be patched in the file (its "
					"trampoline is out of reach, or its bytes differ)", path,
					f->name);
			goto out;
		}
		buf[at] = 0xe9;
		memcpy(buf + at + 1, &d32, 4);
	}

	/* The runtime first among the libraries, and the string table. */
	memmove(&dyn[1], &dyn[0], used * sizeof(*dyn));
	dyn[0].d_tag = DT_NEEDED;
	dyn[0].d_un.d_val = rt_off;
	for (size_t i = 1; i <= used; i++) {
		if (dyn[i].d_tag == DT_STRTAB)
			dyn[i].d_un.d_ptr = V + dynstr_at;
		else if (dyn[i].d_tag == DT_STRSZ)
			dyn[i].d_un.d_val = strsz + strlen(runtime) + 1;
	}
	/* The .dynstr section header follows the table, for the tools that
	 * read sections (readelf, objdump): a superset, at its new place. */
	{
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;

		if (eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shoff <= len &&
		    (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len - eh->e_shoff &&
		    eh->e_shoff % 8 == 0) {
			Elf64_Shdr *sh = (Elf64_Shdr *)(buf + eh->e_shoff);

			for (size_t i = 0; i < eh->e_shnum; i++)
				if (sh[i].sh_type == SHT_STRTAB && sh[i].sh_addr == strtab &&
				    sh[i].sh_flags & SHF_ALLOC) {
					sh[i].sh_addr = V + dynstr_at;
					sh[i].sh_offset = F + dynstr_at;
					sh[i].sh_size = strsz + strlen(runtime) + 1;
				}
		}
	}
	ph[note].p_type = PT_LOAD;
	ph[note].p_flags = PF_R | PF_X;
	ph[note].p_offset = F;
	ph[note].p_vaddr = ph[note].p_paddr = V;
	ph[note].p_filesz = ph[note].p_memsz = sg.n;
	ph[note].p_align = PAGE;

	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode | 0700);
	if (fd < 0) {
		rc = ks_err_set(err, -errno, "cannot create %s: %s", out, strerror(errno));
		goto out;
	}
	{
		static const uint8_t zeros[PAGE];

		if (write(fd, buf, len) != (ssize_t)len ||
		    write(fd, zeros, F - len) != (ssize_t)(F - len) ||
		    write(fd, sg.b, sg.n) != (ssize_t)sg.n || fsync(fd) != 0) {
			rc = ks_err_set(err, -errno, "cannot write %s: %s", out, strerror(errno));
			close(fd);
			unlink(out);
			fd = -1;
			goto out;
		}
	}
	close(fd);
	*npatched = n;
	rc = 0;
out:
	free(ids);
	free(sg.b);
	free(buf);
	return rc;
}
