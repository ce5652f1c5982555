/*
 * Whether an ELF file carries CUDA device code (cuda_logic.h): nvcc puts
 * the fat binary of a program's kernels into a section `.nv_fatbin`.
 * kscope op's CUDA backend asks this of the program at exit when no CUDA
 * call reached it, to tell "not a CUDA program" from "a CUDA program on
 * a machine where CUDA cannot run".  Reads the section headers and their
 * name table only.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_logic.h"

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t r = pread(fd, buf, len, (off_t)off);

	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -ENOEXEC;
}

int ks_cu_elf_has_section(const char *path, const char *name)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *names = NULL;
	size_t want = strlen(name) + 1;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if ((rc = read_at(fd, &eh, sizeof(eh), 0)) != 0)
		goto out;
	rc = -ENOEXEC;
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 ||
	    eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = malloc((size_t)eh.e_shnum * sizeof(*sh));
	if (!sh) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = read_at(fd, sh, (size_t)eh.e_shnum * sizeof(*sh), eh.e_shoff)) != 0)
		goto out;
	rc = -ENOEXEC;
	if (sh[eh.e_shstrndx].sh_size > (1u << 24))
		goto out;
	names = malloc(sh[eh.e_shstrndx].sh_size + 1);
	if (!names) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = read_at(fd, names, sh[eh.e_shstrndx].sh_size, sh[eh.e_shstrndx].sh_offset)))
		goto out;
	names[sh[eh.e_shstrndx].sh_size] = '\0';
	rc = 0;
	for (unsigned i = 0; i < eh.e_shnum && !rc; i++)
		rc = sh[i].sh_name + want <= sh[eh.e_shstrndx].sh_size + 1 &&
		     memcmp(names + sh[i].sh_name, name, want) == 0;
out:
	free(names);
	free(sh);
	close(fd);
	return rc;
}
