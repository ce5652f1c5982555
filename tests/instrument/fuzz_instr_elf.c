/*
 * libFuzzer target for kscope instrument's analysis (src/instrument): the
 * input is an ELF file (written to a memory file), which
 * ks_instr_analyze reads by hand (instr_elf.c) and decodes with capstone.
 * Nothing may crash, read out of bounds or leak; every verdict is either
 * instrumented, with moved instructions that cover at least the 5 patched
 * bytes and lie inside the function, or left alone with a reason; and the
 * relocation of every instrumented function fits a trampoline (or says
 * a displacement does not reach).  The same file is then read as a
 * program kscope instrument --rewrite wrote (ks_instr_rw_read): its
 * segment found and its table read within bounds, or refused.
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <unistd.h>

#include "instr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_instr_image img;
	struct ks_instr_sel sel = { .min_insns = 0 };
	struct ks_err err;
	char path[64];
	int fd = memfd_create("ks-fuzz-instr", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (ks_instr_analyze(path, &sel, &img, &err) == 0) {
		size_t n = 0;

		for (size_t i = 0; i < img.nfuncs; i++) {
			const struct ks_instr_func *f = &img.funcs[i];
			uint8_t out[KS_INSTR_MAX_RELOC_BYTES];

			if (!f->patch) {
				assert(f->reason[0]);
				continue;
			}
			n++;
			assert(f->moved_len >= KS_INSTR_PATCH_LEN && f->moved_len <= f->size);
			assert(f->nmoved >= 1 && f->nmoved <= KS_INSTR_MAX_MOVED);
			/* At the function's own address: it fits, or a displacement
			 * at the edge of rel32 no longer reaches. */
			int r = ks_instr_relocate(f, 0, out, f->addr, sizeof(out), &err);

			assert(r > 0 || r == -ERANGE);
		}
		assert(n == img.npatch);
	}
	ks_instr_image_free(&img);
	/* As a program kscope instrument --rewrite wrote: its segment is
	 * found, checked, and its functions read, or it is refused. */
	{
		struct ks_instr_rw rw;
		struct ks_instr_image rimg = { 0 };
		uint8_t *buf = NULL;
		size_t blen = 0;
		bool pie = false;

		if (ks_instr_rw_read(path, &buf, &blen, &rw, &pie, &err) == 0) {
			if (ks_instr_rw_image(&rw, path, pie, &rimg, &err) == 0) {
				assert(rimg.nfuncs == rw.head->nfuncs && rimg.npatch == rimg.nfuncs);
				for (size_t i = 0; i < rimg.nfuncs; i++)
					assert(strlen(rimg.funcs[i].name) < rw.head->names_len &&
					       rimg.funcs[i].moved_len >= KS_INSTR_PATCH_LEN);
			}
			ks_instr_image_free(&rimg);
			munmap(buf, blen);
		} else {
			assert(!buf);
		}
	}
	close(fd);
	return 0;
}
