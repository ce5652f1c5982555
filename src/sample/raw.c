/*
 * Reading raw sample files (raw_read.h).  The file is mapped read-only;
 * records are handed out in place after their sizes are checked against
 * what remains, and against the least size their type needs, so a file cut
 * off by a killed process, or damaged, is read up to its last sound record.
 */
#include "raw_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The least size of each record type (its fixed part). */
static size_t min_size(unsigned type)
{
	switch (type) {
	case KS_RAW_MODULE:       return sizeof(struct ks_raw_module) + 8;
	case KS_RAW_CHUNK:        return sizeof(struct ks_raw_chunk);
	case KS_RAW_THREAD_BEGIN: return sizeof(struct ks_raw_thread_begin);
	case KS_RAW_THREAD_END:   return sizeof(struct ks_raw_thread_end);
	case KS_RAW_SAMPLE:       return sizeof(struct ks_raw_sample);
	case KS_RAW_REGION_PUSH:
	case KS_RAW_REGION_POP:
	case KS_RAW_MARK:
	case KS_RAW_RANGE_START:
	case KS_RAW_RANGE_END:
	case KS_RAW_PAUSE:
	case KS_RAW_RESUME:       return sizeof(struct ks_raw_named) + 8;
	case KS_RAW_MPI:          return sizeof(struct ks_raw_mpi);
	case KS_RAW_COUNTER:      return sizeof(struct ks_raw_counter);
	case KS_RAW_COUNTER_INFO: return offsetof(struct ks_raw_counter_info, error);
	case KS_RAW_DROPPED:      return sizeof(struct ks_raw_dropped);
	case KS_RAW_END:          return sizeof(struct ks_raw_end);
	case KS_RAW_CMDLINE:      return sizeof(struct ks_raw_cmdline);
	case KS_RAW_IMAGE:        return sizeof(struct ks_raw_image);
	default:                  return 0;
	}
}

int ks_raw_open(const char *path, struct ks_raw_file *f, struct ks_err *err)
{
	struct stat st;
	void *map;
	int fd;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ks_err_set(err, -errno, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) != 0) {
		int e = errno;

		close(fd);
		return ks_err_set(err, -e, "cannot read '%s': %s", path, strerror(e));
	}
	if ((size_t)st.st_size < sizeof(struct ks_raw_file_header)) {
		close(fd);
		return ks_err_set(err, -EINVAL, "'%s' is too short for a raw sample file "
				  "(%lld bytes)", path, (long long)st.st_size);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return ks_err_set(err, -errno, "cannot map '%s': %s", path, strerror(errno));
	f->data = map;
	f->size = (size_t)st.st_size;
	f->hdr = map;
	if (memcmp(f->hdr->magic, KS_RAW_MAGIC, 8) != 0 ||
	    f->hdr->version != KS_RAW_VERSION ||
	    f->hdr->header_size < sizeof(struct ks_raw_file_header) ||
	    f->hdr->header_size > f->size || f->hdr->header_size % 8) {
		ks_raw_close(f);
		return ks_err_set(err, -EINVAL, "'%s' is not a kscope raw sample file "
				  "of version %d", path, KS_RAW_VERSION);
	}
	return 0;
}

void ks_raw_close(struct ks_raw_file *f)
{
	if (f->data)
		munmap((void *)(uintptr_t)f->data, f->size);
	memset(f, 0, sizeof(*f));
}

void ks_raw_iter_file(const struct ks_raw_file *f, struct ks_raw_iter *it)
{
	it->p = f->data + f->hdr->header_size;
	it->end = f->data + f->size;
	it->tid = 0;
}

void ks_raw_iter_chunk(const struct ks_raw_chunk *c, struct ks_raw_iter *it)
{
	it->p = (const unsigned char *)(c + 1);
	it->end = (const unsigned char *)c + c->h.size;
	it->tid = c->tid;
}

const struct ks_raw_rec *ks_raw_next(struct ks_raw_iter *it, size_t *bad)
{
	const struct ks_raw_rec *r;
	size_t left = (size_t)(it->end - it->p), need;

	if (bad)
		*bad = 0;
	if (left == 0)
		return NULL;
	r = (const struct ks_raw_rec *)it->p;
	need = left >= sizeof(*r) ? min_size(r->type) : 0;
	if (left < sizeof(*r) || r->size % 8 || r->size > left || need == 0 ||
	    r->size < need) {
		if (bad)
			*bad = left;
		it->p = it->end;
		return NULL;
	}
	/* A sample's arrays must fit inside it. */
	if (r->type == KS_RAW_SAMPLE) {
		const struct ks_raw_sample *s = (const void *)r;
		size_t words = (size_t)s->ncounters + s->nframes;

		if (s->nframes > KS_RAW_MAX_FRAMES || s->ncounters > KS_RAW_MAX_COUNTERS ||
		    sizeof(*s) + words * 8 > r->size) {
			if (bad)
				*bad = left;
			it->p = it->end;
			return NULL;
		}
	}
	/* An image's bytes must fit inside it. */
	if (r->type == KS_RAW_IMAGE &&
	    ((const struct ks_raw_image *)(const void *)r)->size >
	    r->size - sizeof(struct ks_raw_image)) {
		if (bad)
			*bad = left;
		it->p = it->end;
		return NULL;
	}
	it->p += r->size;
	return r;
}

const char *ks_raw_string(const struct ks_raw_rec *r, const char *field)
{
	const char *end = (const char *)r + r->size;

	if (field < (const char *)r || field >= end)
		return NULL;
	return memchr(field, '\0', (size_t)(end - field)) ? field : NULL;
}
