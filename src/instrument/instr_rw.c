/*
 * The segment kscope instrument --rewrite adds to a program (instr.h,
 * struct ks_instr_rw_head): checked and read by kscope (a rewritten
 * program given to kscope instrument or --list) and by the runtime
 * inside the rewritten program.  Everything is bound-checked: kscope
 * reads it from a file it was given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "instr.h"

static bool within(uint64_t off, uint64_t n, size_t len)
{
	return off <= len && n <= len - off;
}

int ks_instr_rw_parse(const uint8_t *seg, size_t len, struct ks_instr_rw *rw,
		      struct ks_err *err)
{
	const struct ks_instr_rw_head *h = (const struct ks_instr_rw_head *)seg;

	memset(rw, 0, sizeof(*rw));
	/* (Where the segment is not 8-byte aligned in the file, it was not
	 * written by kscope: its head is page-aligned.) */
	if (len < sizeof(*h) || (uintptr_t)seg % 8 || memcmp(h->magic, KS_INSTR_RW_MAGIC, 16) != 0)
		return -ENOENT;
	if (h->size > len || h->funcs % 8 || h->tramp % 16 ||
	    !within(h->funcs, (uint64_t)h->nfuncs * sizeof(struct ks_instr_rw_func), h->size) ||
	    !within(h->names, h->names_len, h->size) || !within(h->argv, h->argv_len, h->size) ||
	    !within(h->tramp, KS_INSTR_TRAMP_HEAD + (uint64_t)h->nfuncs * KS_INSTR_STUB_SIZE,
		    h->size) ||
	    !h->names_len || seg[h->names + h->names_len - 1] != '\0' ||
	    h->runtime >= h->names_len ||
	    h->argv_len < 2 || seg[h->argv + h->argv_len - 1] != '\0' ||
	    seg[h->argv + h->argv_len - 2] != '\0')
		return ks_err_set(err, -EINVAL, "its kscope segment is damaged");
	rw->head = h;
	rw->funcs = (const struct ks_instr_rw_func *)(seg + h->funcs);
	rw->names = (const char *)seg + h->names;
	rw->argv = (const char *)seg + h->argv;
	rw->argv_len = h->argv_len;
	rw->tramp = seg + h->tramp;
	rw->runtime = rw->names + h->runtime;
	for (uint32_t i = 0; i < h->nfuncs; i++)
		if (rw->funcs[i].name >= h->names_len ||
		    rw->funcs[i].moved_len < KS_INSTR_PATCH_LEN ||
		    rw->funcs[i].moved_len > KS_INSTR_MAX_MOVED_BYTES)
			return ks_err_set(err, -EINVAL, "its kscope segment is damaged "
					  "(function %u)", i);
	return 0;
}

int ks_instr_rw_image(const struct ks_instr_rw *rw, const char *path, bool pie,
		      struct ks_instr_image *img, struct ks_err *err)
{
	uint32_t n = rw->head->nfuncs;

	memset(img, 0, sizeof(*img));
	img->path = strdup(path);
	img->pie = pie;
	img->symtab = rw->head->dynsym ? ".dynsym" : ".symtab";
	img->funcs = calloc(n ? n : 1, sizeof(*img->funcs));
	if (!img->path || !img->funcs)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++) {
		const struct ks_instr_rw_func *r = &rw->funcs[i];
		struct ks_instr_func *f = &img->funcs[i];

		if (!(f->name = strdup(rw->names + r->name)))
			return ks_err_set(err, -ENOMEM, "out of memory");
		img->nfuncs++;
		f->addr = r->addr;
		f->size = r->size;
		f->ninsns = r->ninsns;
		f->patch = true;
		f->moved_len = r->moved_len;
		memcpy(f->bytes, r->bytes, sizeof(f->bytes));
		snprintf(f->reason, sizeof(f->reason), "instrumented (rewritten)");
	}
	img->npatch = n;
	return 0;
}
