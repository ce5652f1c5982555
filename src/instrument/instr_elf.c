/*
 * The function symbols of a 64-bit x86-64 ELF file, for kscope
 * instrument's analysis (instr.h): names, addresses, sizes, the section
 * each is in and its bytes, from a read-only mapping of the file.
 *
 * Written by hand rather than with libelf, as src/memtools/rt/rt_sym.c
 * is: the analysis also runs inside the program under test (the runtime,
 * before main), which must not get a library it did not ask for.  Only
 * what the analysis needs is read: the section headers and one symbol
 * table (.symtab, else .dynsym), each bound-checked against the file.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "instr.h"

struct ks_instr_elf {
	uint8_t *map;              /* the file, mapped read-only */
	size_t len;
	const Elf64_Ehdr *eh;
	const Elf64_Shdr *sh;      /* section headers, eh->e_shnum of them */
	const char *shstr;         /* section names */
	size_t shstr_len;
	const Elf64_Shdr *symsec;  /* .symtab or .dynsym, or NULL */
	const char *symtab_name;
};

/* Whether [off, off+len) lies in the file. */
static bool in_file(const struct ks_instr_elf *e, uint64_t off, uint64_t len)
{
	return off <= e->len && len <= e->len - off;
}

static const char *sec_name(const struct ks_instr_elf *e, const Elf64_Shdr *s)
{
	if (!e->shstr || s->sh_name >= e->shstr_len)
		return "";
	/* The table ends in a NUL (checked at open), so this is a string. */
	return e->shstr + s->sh_name;
}

int ks_instr_elf_open(const char *path, struct ks_instr_elf **out, struct ks_err *err)
{
	struct ks_instr_elf *e = NULL;
	struct stat st;
	int fd, rc = 0;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = ks_err_set(err, -errno, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(Elf64_Ehdr)) {
		rc = ks_err_set(err, -ENOEXEC, "%s is not an ELF file", path);
		goto out;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	e->len = (size_t)st.st_size;
	e->map = mmap(NULL, e->len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (e->map == MAP_FAILED) {
		e->map = NULL;
		rc = ks_err_set(err, -errno, "cannot map %s: %s", path, strerror(errno));
		goto out;
	}
	e->eh = (const Elf64_Ehdr *)e->map;
	if (memcmp(e->eh->e_ident, ELFMAG, SELFMAG) != 0) {
		rc = ks_err_set(err, -ENOEXEC, "%s is not an ELF file", path);
		goto out;
	}
	if (e->eh->e_ident[EI_CLASS] != ELFCLASS64 || e->eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    e->eh->e_machine != EM_X86_64 ||
	    (e->eh->e_type != ET_EXEC && e->eh->e_type != ET_DYN)) {
		rc = ks_err_set(err, -ENOEXEC,
				"%s is not a 64-bit x86-64 ELF executable (kscope instrument "
				"patches x86-64 code only)", path);
		goto out;
	}
	/* The headers are read in place: they must be aligned as their type. */
	if (e->eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    e->eh->e_shoff % _Alignof(Elf64_Shdr) != 0 ||
	    !in_file(e, e->eh->e_shoff, (uint64_t)e->eh->e_shnum * sizeof(Elf64_Shdr))) {
		rc = ks_err_set(err, -ENOEXEC, "%s has damaged section headers", path);
		goto out;
	}
	e->sh = (const Elf64_Shdr *)(e->map + e->eh->e_shoff);
	if (e->eh->e_shstrndx < e->eh->e_shnum) {
		const Elf64_Shdr *s = &e->sh[e->eh->e_shstrndx];

		if (s->sh_type != SHT_NOBITS && s->sh_size && in_file(e, s->sh_offset, s->sh_size) &&
		    e->map[s->sh_offset + s->sh_size - 1] == '\0') {
			e->shstr = (const char *)e->map + s->sh_offset;
			e->shstr_len = s->sh_size;
		}
	}
	for (int want = SHT_SYMTAB; want; want = want == SHT_SYMTAB ? SHT_DYNSYM : 0) {
		for (unsigned i = 0; i < e->eh->e_shnum && !e->symsec; i++) {
			const Elf64_Shdr *s = &e->sh[i];

			if (s->sh_type != (unsigned)want || s->sh_entsize != sizeof(Elf64_Sym) ||
			    s->sh_offset % _Alignof(Elf64_Sym) != 0 ||
			    !in_file(e, s->sh_offset, s->sh_size) || s->sh_link >= e->eh->e_shnum)
				continue;
			e->symsec = s;
			e->symtab_name = want == SHT_SYMTAB ? ".symtab" : ".dynsym";
		}
		if (e->symsec)
			break;
	}
	*out = e;
	e = NULL;
out:
	if (e)
		ks_instr_elf_close(e);
	close(fd);
	return rc;
}

void ks_instr_elf_close(struct ks_instr_elf *e)
{
	if (!e)
		return;
	if (e->map)
		munmap(e->map, e->len);
	free(e);
}

bool ks_instr_elf_pie(const struct ks_instr_elf *e)
{
	return e->eh->e_type == ET_DYN;
}

uint64_t ks_instr_elf_entry(const struct ks_instr_elf *e)
{
	return e->eh->e_entry;
}

const char *ks_instr_elf_symtab(const struct ks_instr_elf *e)
{
	return e->symtab_name;
}

int ks_instr_elf_funcs(const struct ks_instr_elf *e, struct ks_instr_sym **syms, size_t *n,
		       struct ks_err *err)
{
	const Elf64_Shdr *ss = e->symsec, *strs;
	const Elf64_Sym *tab;
	const char *str;
	size_t count, k = 0;
	struct ks_instr_sym *v;

	*syms = NULL;
	*n = 0;
	if (!ss)
		return 0;
	strs = &e->sh[ss->sh_link];
	if (strs->sh_type != SHT_STRTAB || !in_file(e, strs->sh_offset, strs->sh_size) ||
	    !strs->sh_size || e->map[strs->sh_offset + strs->sh_size - 1] != '\0')
		return ks_err_set(err, -ENOEXEC, "the string table of %s is damaged",
				  e->symtab_name);
	tab = (const Elf64_Sym *)(e->map + ss->sh_offset);
	str = (const char *)e->map + strs->sh_offset;
	count = ss->sh_size / sizeof(Elf64_Sym);
	v = calloc(count ? count : 1, sizeof(*v));
	if (!v)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < count; i++) {
		const Elf64_Sym *s = &tab[i];
		unsigned type = ELF64_ST_TYPE(s->st_info);
		const Elf64_Shdr *sec;
		struct ks_instr_sym *o;

		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || !s->st_size ||
		    s->st_shndx == SHN_UNDEF || s->st_shndx >= e->eh->e_shnum ||
		    s->st_name >= strs->sh_size || !str[s->st_name])
			continue;
		sec = &e->sh[s->st_shndx];
		o = &v[k++];
		o->name = str + s->st_name;
		o->addr = s->st_value;
		o->size = s->st_size;
		o->ifunc = type == STT_GNU_IFUNC;
		o->global = ELF64_ST_BIND(s->st_info) != STB_LOCAL;
		o->section = sec_name(e, sec);
		o->exec = (sec->sh_flags & SHF_EXECINSTR) != 0;
		if (sec->sh_type != SHT_NOBITS && s->st_value >= sec->sh_addr &&
		    s->st_size <= sec->sh_size && s->st_value - sec->sh_addr <= sec->sh_size - s->st_size &&
		    in_file(e, sec->sh_offset + (s->st_value - sec->sh_addr), s->st_size))
			o->bytes = e->map + sec->sh_offset + (s->st_value - sec->sh_addr);
	}
	*syms = v;
	*n = k;
	return 0;
}
