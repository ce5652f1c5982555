/*
 * The visualize_data.bin reader (kscope/vizbin.h).
 *
 * The file is mapped read-only and walked once, block by block.  Every
 * length is compared with the bytes that remain before it is used, so a
 * damaged or hostile file can only be reported, never read past its end.
 * The index of blocks refers into the mapping; payloads are not copied.
 */
#include <kscope/vizbin.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format_int.h"

struct ks_vb_reader {
	const unsigned char *data;
	size_t size;
	void *map;              /* our mapping, or NULL (memory or empty file) */
	struct ks_vb_block *blocks;
	uint32_t count, cap;
};

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static int add_block(struct ks_vb_reader *r, const struct ks_vb_block *b)
{
	if (r->count == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 16;
		struct ks_vb_block *nb = realloc(r->blocks, cap * sizeof(*nb));

		if (!nb)
			return -ENOMEM;
		r->blocks = nb;
		r->cap = cap;
	}
	r->blocks[r->count++] = *b;
	return 0;
}

/* Checks the NUL-padded path area (at file offset off) of the source
 * block whose header is at hdr.  Messages name the block by its header
 * offset, like every reader message; err->offset is the bad byte. */
static int check_path(const unsigned char *p, uint32_t idx, uint64_t hdr,
		      uint64_t off, struct ks_vb_error *err)
{
	const unsigned char *nul = memchr(p, 0, KS_VB_PATH_SIZE);
	size_t n;

	if (!nul)
		return ks_vb_fail(err, -EINVAL, idx, off,
				  "block %u at offset %llu: source path is not "
				  "NUL-terminated within %d bytes", idx,
				  (unsigned long long)hdr, KS_VB_PATH_SIZE);
	n = (size_t)(nul - p);
	if (n == 0)
		return ks_vb_fail(err, -EINVAL, idx, off,
				  "block %u at offset %llu: source path is empty",
				  idx, (unsigned long long)hdr);
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return ks_vb_fail(err, -EINVAL, idx, off + i,
					  "block %u at offset %llu: source path has "
					  "control byte 0x%02x at offset %llu", idx,
					  (unsigned long long)hdr, p[i],
					  (unsigned long long)(off + i));
	for (size_t i = n; i < KS_VB_PATH_SIZE; i++)
		if (p[i] != 0)
			return ks_vb_fail(err, -EINVAL, idx, off + i,
					  "block %u at offset %llu: source path "
					  "padding is not zero at offset %llu", idx,
					  (unsigned long long)hdr,
					  (unsigned long long)(off + i));
	return 0;
}

/* Walks the whole file; stops at the first damage. */
static int parse(struct ks_vb_reader *r, unsigned flags, struct ks_vb_error *err)
{
	uint64_t off = 0, size = r->size;
	uint32_t idx = 0;
	int rc;

	while (off < size) {
		const unsigned char *h = r->data + off;
		struct ks_vb_block b;
		uint64_t p, left;

		memset(&b, 0, sizeof(b));
		if (size - off < KS_VB_HEADER_SIZE)
			return ks_vb_fail(err, -EINVAL, idx, off,
					  "block %u at offset %llu: truncated header "
					  "(%llu of %d bytes)", idx,
					  (unsigned long long)off,
					  (unsigned long long)(size - off),
					  KS_VB_HEADER_SIZE);
		b.index = idx;
		b.offset = off;
		b.content_size = get_u64(h);
		b.type = h[8];
		b.padding = h[9];
		b.version = h[10];
		b.reserve = h[11];
		if (b.reserve != KS_VB_RESERVE)
			return ks_vb_fail(err, -EINVAL, idx, off + 11,
					  "block %u at offset %llu: reserve byte is "
					  "0x%02x, not 0x5a: not a visualize_data.bin "
					  "block", idx, (unsigned long long)off,
					  b.reserve);
		if (b.type == KS_VB_INVALID || b.type > KS_VB_TYPE_MAX)
			return ks_vb_fail(err, -EINVAL, idx, off + 8,
					  "block %u at offset %llu: unknown block type "
					  "0x%02x", idx, (unsigned long long)off, b.type);
		if (!(b.version == KS_VB_VERSION ||
		      (b.type == KS_VB_API_INSTR &&
		       b.version == KS_VB_VERSION_BY_LOCATION)))
			return ks_vb_fail(err, -EINVAL, idx, off + 10,
					  "block %u at offset %llu: version 0x%02x is "
					  "not valid for type 0x%02x", idx,
					  (unsigned long long)off, b.version, b.type);
		if (b.content_size == UINT64_MAX)
			return ks_vb_fail(err, -EINVAL, idx, off,
					  "block %u at offset %llu was never finished "
					  "(its writer stopped while writing it)", idx,
					  (unsigned long long)off);
		if (b.padding > 3 || b.content_size % 4 != 0 ||
		    b.content_size < b.padding)
			return ks_vb_fail(err, -EINVAL, idx, off,
					  "block %u at offset %llu: inconsistent sizes "
					  "(contentSize %llu, padding %u): contentSize "
					  "must be a multiple of 4 and padding 0 to 3",
					  idx, (unsigned long long)off,
					  (unsigned long long)b.content_size, b.padding);
		p = off + KS_VB_HEADER_SIZE;
		if (b.type == KS_VB_SOURCE) {
			if (size - p < KS_VB_PATH_SIZE)
				return ks_vb_fail(err, -EINVAL, idx, p,
						  "block %u at offset %llu: truncated "
						  "source path (%llu of %d bytes)", idx,
						  (unsigned long long)off,
						  (unsigned long long)(size - p),
						  KS_VB_PATH_SIZE);
			rc = check_path(r->data + p, idx, off, p, err);
			if (rc)
				return rc;
			b.path = (const char *)(r->data + p);
			p += KS_VB_PATH_SIZE;
		}
		left = size - p;
		if (b.content_size > left)
			return ks_vb_fail(err, -EINVAL, idx, p,
					  "block %u at offset %llu: truncated: it "
					  "declares %llu content bytes but the file "
					  "has %llu left", idx, (unsigned long long)off,
					  (unsigned long long)b.content_size,
					  (unsigned long long)left);
		b.payload = r->data + p;
		b.payload_offset = p;
		b.payload_size = b.content_size - b.padding;
		for (unsigned i = 0; i < b.padding; i++)
			if (b.payload[b.payload_size + i] != 0)
				return ks_vb_fail(err, -EINVAL, idx,
						  p + b.payload_size + i,
						  "block %u at offset %llu: padding byte "
						  "at offset %llu is not zero", idx,
						  (unsigned long long)off,
						  (unsigned long long)(p + b.payload_size + i));
		if (flags & KS_VB_CHECK_PAYLOADS) {
			rc = ks_vb_check_payload(&b, NULL, 0, err);
			if (rc)
				return rc;
		}
		if (add_block(r, &b))
			return ks_vb_fail(err, -ENOMEM, idx, off, "out of memory");
		off = p + b.content_size;
		idx++;
	}
	return 0;
}

static int finish_open(struct ks_vb_reader *r, unsigned flags,
		       struct ks_vb_reader **out, struct ks_vb_error *err)
{
	int rc = parse(r, flags, err);

	if (rc && !(flags & KS_VB_KEEP_PARTIAL)) {
		ks_vb_close(r);
		return rc;
	}
	*out = r;
	return rc;
}

int ks_vb_open_mem(const void *data, size_t size, unsigned flags,
		   struct ks_vb_reader **out, struct ks_vb_error *err)
{
	struct ks_vb_reader *r;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return ks_vb_fail(err, -ENOMEM, 0, 0, "out of memory");
	r->data = data;
	r->size = size;
	return finish_open(r, flags, out, err);
}

int ks_vb_open(const char *path, unsigned flags, struct ks_vb_reader **out,
	       struct ks_vb_error *err)
{
	struct ks_vb_reader *r;
	struct stat st;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ks_vb_fail(err, -errno, 0, 0, "cannot open '%s': %s", path,
				  strerror(errno));
	if (fstat(fd, &st) != 0) {
		int e = errno;

		close(fd);
		return ks_vb_fail(err, -e, 0, 0, "cannot read '%s': %s", path,
				  strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ks_vb_fail(err, -EINVAL, 0, 0, "'%s' is not a regular file",
				  path);
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return ks_vb_fail(err, -ENOMEM, 0, 0, "out of memory");
	}
	r->size = (size_t)st.st_size;
	if (r->size > 0) {
		r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (r->map == MAP_FAILED) {
			int e = errno;

			close(fd);
			free(r);
			return ks_vb_fail(err, -e, 0, 0, "cannot map '%s': %s", path,
					  strerror(e));
		}
		r->data = r->map;
	}
	close(fd);
	return finish_open(r, flags, out, err);
}

uint32_t ks_vb_count(const struct ks_vb_reader *r)
{
	return r->count;
}

const struct ks_vb_block *ks_vb_block_at(const struct ks_vb_reader *r, uint32_t i)
{
	return i < r->count ? &r->blocks[i] : NULL;
}

uint64_t ks_vb_file_size(const struct ks_vb_reader *r)
{
	return r->size;
}

void ks_vb_close(struct ks_vb_reader *r)
{
	if (!r)
		return;
	if (r->map)
		munmap(r->map, r->size);
	free(r->blocks);
	free(r);
}
