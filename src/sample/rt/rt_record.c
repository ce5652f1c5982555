/*
 * Per-thread records written from normal code: user-API regions, marks,
 * ranges, pause/resume, MPI calls and thread begin/end.  They go into the
 * calling thread's buffer like samples do, under the thread's busy flag, so
 * a sampling signal that arrives meanwhile is dropped rather than
 * corrupting the record (see rt_buffer_async.c).
 */
#include <string.h>

#include "rt_int.h"

void ks_rt_record(const void *rec, uint32_t size)
{
	struct ks_rt_thread *t = ks_rt_thread_adopt();
	void *p;

	if (!t || !ks_rt_busy_wait(t))
		return;
	if (!t->ended) {
		p = ks_rt_buf_reserve(t, KS_RAW_ALIGN(size));
		if (p) {
			memcpy(p, rec, size);
			ks_rt_buf_commit(t, size);
		}
	}
	ks_rt_busy_release(t);
}

/* The length of name cut to fit KS_RAW_NAME_MAX with its NUL, without
 * splitting a UTF-8 sequence. */
static size_t name_len(const char *name)
{
	size_t len = strnlen(name, KS_RAW_NAME_MAX);

	if (len > KS_RAW_NAME_MAX - 1) {
		len = KS_RAW_NAME_MAX - 1;
		while (len > 0 && ((unsigned char)name[len] & 0xC0) == 0x80)
			len--;
	}
	return len;
}

void ks_rt_record_named(uint16_t type, const char *name, uint64_t id)
{
	union {
		struct ks_raw_named n;
		unsigned char bytes[sizeof(struct ks_raw_named) + KS_RAW_NAME_MAX + 8];
	} u;
	size_t len = name ? name_len(name) : 0;
	uint32_t size = KS_RAW_ALIGN((uint32_t)(sizeof(struct ks_raw_named) + len + 1));

	memset(&u, 0, size);
	u.n.h.type = type;
	u.n.h.size = size;
	u.n.ts = ks_rt_now();
	u.n.id = id;
	if (len)
		memcpy(u.n.name, name, len);
	ks_rt_record(&u, size);
}
