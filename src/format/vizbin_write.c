/*
 * The visualize_data.bin writer (kscope/vizbin.h).
 *
 * A block is written as: a header whose contentSize is the placeholder
 * UINT64_MAX, the path area (0x01 only), the payload through a 64 KiB
 * buffer, the padding; then the real contentSize is written over the
 * placeholder.  A reader that meets the placeholder (the writer was
 * killed mid-block) reports an unfinished block instead of misreading.
 * Any failed write cuts the file back to the end of the last complete
 * block, so a failure costs at most the block being written.
 */
#include <kscope/vizbin.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format_int.h"

#define WBUF_SIZE (64 * 1024)

struct ks_vb_writer {
	int fd;
	uint64_t good_end;     /* end of the last complete block */
	uint64_t pos;          /* file offset of the next byte to write */
	uint32_t blocks;       /* complete blocks */
	bool in_block;
	uint64_t block_start;  /* header offset of the open block */
	uint64_t payload_len;  /* payload bytes of the open block so far */
	unsigned char hdr[KS_VB_HEADER_SIZE];
	size_t buf_used;
	unsigned char buf[WBUF_SIZE];
};

#define werr ks_vb_fail

void ks_vb_put_header(unsigned char *h, uint64_t content_size, unsigned type,
		      unsigned padding, unsigned version)
{
	for (int i = 0; i < 8; i++)
		h[i] = (unsigned char)(content_size >> (8 * i));
	h[8] = (unsigned char)type;
	h[9] = (unsigned char)padding;
	h[10] = (unsigned char)version;
	h[11] = KS_VB_RESERVE;
}

static int write_all(int fd, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Cuts the file back to the last complete block after a failure. */
static int fail(struct ks_vb_writer *w, struct ks_vb_error *err, int code,
		const char *what)
{
	int cut = ftruncate(w->fd, (off_t)w->good_end);

	lseek(w->fd, (off_t)w->good_end, SEEK_SET);
	w->pos = w->good_end;
	w->buf_used = 0;
	w->in_block = false;
	return werr(err, code, w->blocks, w->good_end,
		    "block %u at offset %llu: %s failed: %s%s", w->blocks,
		    (unsigned long long)w->good_end, what, strerror(-code),
		    cut ? " (and the file could not be cut back)" :
			  "; the file was cut back to its complete blocks");
}

static int flush(struct ks_vb_writer *w)
{
	int rc;

	if (w->buf_used == 0)
		return 0;
	rc = write_all(w->fd, w->buf, w->buf_used);
	if (rc == 0) {
		w->pos += w->buf_used;
		w->buf_used = 0;
	}
	return rc;
}

static int buffered(struct ks_vb_writer *w, const void *data, size_t len)
{
	const unsigned char *p = data;
	int rc;

	while (len > 0) {
		size_t room = WBUF_SIZE - w->buf_used;
		size_t n = len < room ? len : room;

		memcpy(w->buf + w->buf_used, p, n);
		w->buf_used += n;
		p += n;
		len -= n;
		if (w->buf_used == WBUF_SIZE) {
			rc = flush(w);
			if (rc)
				return rc;
		}
	}
	return 0;
}

int ks_vb_writer_open(int fd, struct ks_vb_writer **out, struct ks_vb_error *err)
{
	struct ks_vb_writer *w;
	struct stat st;
	off_t end;

	*out = NULL;
	if (fstat(fd, &st) != 0)
		return werr(err, -errno, 0, 0, "cannot use the output: %s",
			    strerror(errno));
	if (!S_ISREG(st.st_mode))
		return werr(err, -EINVAL, 0, 0, "the output is not a regular file");
	end = lseek(fd, 0, SEEK_END);
	if (end < 0)
		return werr(err, -errno, 0, 0, "cannot seek the output: %s",
			    strerror(errno));
	w = calloc(1, sizeof(*w));
	if (!w)
		return werr(err, -ENOMEM, 0, 0, "out of memory");
	w->fd = fd;
	w->good_end = w->pos = (uint64_t)end;
	*out = w;
	return 0;
}

int ks_vb_begin(struct ks_vb_writer *w, unsigned type, unsigned version,
		const char *source_path, struct ks_vb_error *err)
{
	unsigned char pathbuf[KS_VB_PATH_SIZE];
	int rc;

	if (w->in_block)
		return werr(err, -EBUSY, w->blocks, w->pos,
			    "block %u is still open", w->blocks);
	if (type == KS_VB_INVALID || type > KS_VB_TYPE_MAX)
		return werr(err, -EINVAL, w->blocks, w->pos,
			    "unknown block type 0x%02x", type);
	if (!(version == KS_VB_VERSION ||
	      (type == KS_VB_API_INSTR && version == KS_VB_VERSION_BY_LOCATION)))
		return werr(err, -EINVAL, w->blocks, w->pos,
			    "version 0x%02x is not valid for block type 0x%02x",
			    version, type);
	if ((type == KS_VB_SOURCE) != (source_path != NULL))
		return werr(err, -EINVAL, w->blocks, w->pos,
			    type == KS_VB_SOURCE ? "a source block needs its file path"
						 : "only source blocks carry a file path");
	if (source_path) {
		size_t n = strlen(source_path);

		if (n == 0 || n >= KS_VB_PATH_SIZE)
			return werr(err, -EINVAL, w->blocks, w->pos,
				    "source path must be 1 to %d bytes long",
				    KS_VB_PATH_SIZE - 1);
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)source_path[i] < 0x20 ||
			    (unsigned char)source_path[i] == 0x7f)
				return werr(err, -EINVAL, w->blocks, w->pos,
					    "source path contains a control character");
		memset(pathbuf, 0, sizeof(pathbuf));
		memcpy(pathbuf, source_path, n);
	}
	w->block_start = w->pos;
	w->payload_len = 0;
	w->in_block = true;
	ks_vb_put_header(w->hdr, UINT64_MAX, type, 0, version);
	rc = buffered(w, w->hdr, sizeof(w->hdr));
	if (!rc && source_path)
		rc = buffered(w, pathbuf, sizeof(pathbuf));
	if (rc)
		return fail(w, err, rc, "writing the header");
	return 0;
}

int ks_vb_append(struct ks_vb_writer *w, const void *data, size_t len,
		 struct ks_vb_error *err)
{
	int rc;

	if (!w->in_block)
		return werr(err, -EINVAL, w->blocks, w->pos, "no block is open");
	rc = buffered(w, data, len);
	if (rc)
		return fail(w, err, rc, "writing the payload");
	w->payload_len += len;
	return 0;
}

int ks_vb_end(struct ks_vb_writer *w, struct ks_vb_error *err)
{
	static const unsigned char zeros[4];
	unsigned padding;
	ssize_t n;
	int rc;

	if (!w->in_block)
		return werr(err, -EINVAL, w->blocks, w->pos, "no block is open");
	padding = (unsigned)((4 - w->payload_len % 4) % 4);
	rc = buffered(w, zeros, padding);
	if (!rc)
		rc = flush(w);
	if (rc)
		return fail(w, err, rc, "writing the payload");
	/* Replace the placeholder with the real size: the block is complete
	 * only once this lands. */
	ks_vb_put_header(w->hdr, w->payload_len + padding, w->hdr[8], padding,
			 w->hdr[10]);
	n = pwrite(w->fd, w->hdr, sizeof(w->hdr), (off_t)w->block_start);
	if (n != (ssize_t)sizeof(w->hdr))
		return fail(w, err, n < 0 ? -errno : -EIO, "finishing the header");
	w->in_block = false;
	w->good_end = w->pos;
	w->blocks++;
	return 0;
}

int ks_vb_write(struct ks_vb_writer *w, unsigned type, unsigned version,
		const char *source_path, const void *data, size_t len,
		struct ks_vb_error *err)
{
	int rc = ks_vb_begin(w, type, version, source_path, err);

	if (!rc)
		rc = ks_vb_append(w, data, len, err);
	if (!rc)
		rc = ks_vb_end(w, err);
	return rc;
}

uint32_t ks_vb_writer_blocks(const struct ks_vb_writer *w)
{
	return w->blocks;
}

void ks_vb_writer_free(struct ks_vb_writer *w)
{
	if (!w)
		return;
	if (w->in_block) {
		if (ftruncate(w->fd, (off_t)w->good_end) == 0)
			lseek(w->fd, (off_t)w->good_end, SEEK_SET);
	}
	free(w);
}
