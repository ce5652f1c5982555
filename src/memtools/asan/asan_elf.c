/* Whether a program was built with AddressSanitizer (asan.h). */
#include "asan.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

/* Whether a dynamic entry names libasan, or a symbol of the section is
 * __asan_init. */
static bool section_says_asan(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return false;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 0; i < n; i++) {
		if (sh->sh_type == SHT_DYNAMIC) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(elf, sh->sh_link, dyn.d_un.d_val);
			if (name && !strncmp(name, "libasan.so", 10))
				return true;
		} else {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym))
				continue;
			name = elf_strptr(elf, sh->sh_link, sym.st_name);
			if (name && !strcmp(name, "__asan_init"))
				return true;
		}
	}
	return false;
}

int ks_asan_built_with(const char *path, struct ks_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	bool yes = false;

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
	while (!yes && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNAMIC || sh.sh_type == SHT_DYNSYM)
			yes = section_says_asan(elf, scn, &sh);
	}
	elf_end(elf);
	close(fd);
	return yes;
}
