/*
 * The protocol-buffer encoder of pb.h: varints and fixed-width values
 * appended to a growable buffer, and nested messages whose length is
 * filled in when they end.
 */
#include "pb.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for n more bytes; false (and b->error set) when out of
 * memory or after an earlier failure. */
static bool reserve(struct ks_pb *b, size_t n)
{
	size_t cap;
	uint8_t *nb;

	if (b->error)
		return false;
	if (b->cap - b->len >= n)
		return true;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->error = -ENOMEM;
			return false;
		}
		cap *= 2;
	}
	nb = realloc(b->buf, cap);
	if (!nb) {
		b->error = -ENOMEM;
		return false;
	}
	b->buf = nb;
	b->cap = cap;
	return true;
}

void ks_pb_free(struct ks_pb *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

size_t ks_pb_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

size_t ks_pb_put_varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static void put_varint(struct ks_pb *b, uint64_t v)
{
	if (reserve(b, 10))
		b->len += ks_pb_put_varint(b->buf + b->len, v);
}

static void put_tag(struct ks_pb *b, uint32_t field, enum ks_pb_wire wire)
{
	put_varint(b, (uint64_t)field << 3 | wire);
}

void ks_pb_varint(struct ks_pb *b, uint64_t v)
{
	put_varint(b, v);
}

void ks_pb_uint(struct ks_pb *b, uint32_t field, uint64_t v)
{
	put_tag(b, field, KS_PB_VARINT);
	put_varint(b, v);
}

void ks_pb_int(struct ks_pb *b, uint32_t field, int64_t v)
{
	/* int32 and int64 both encode negative values as their 64-bit two's
	 * complement (ten bytes). */
	put_tag(b, field, KS_PB_VARINT);
	put_varint(b, (uint64_t)v);
}

void ks_pb_sint(struct ks_pb *b, uint32_t field, int64_t v)
{
	put_tag(b, field, KS_PB_VARINT);
	put_varint(b, ks_pb_zigzag(v));
}

void ks_pb_double(struct ks_pb *b, uint32_t field, double v)
{
	uint64_t bits;

	put_tag(b, field, KS_PB_I64);
	if (!reserve(b, 8))
		return;
	memcpy(&bits, &v, sizeof(bits));
	/* Little-endian on the wire whatever the host's byte order. */
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (uint8_t)(bits >> (8 * i));
}

void ks_pb_bytes(struct ks_pb *b, uint32_t field, const void *data, size_t len)
{
	put_tag(b, field, KS_PB_LEN);
	put_varint(b, len);
	if (len && reserve(b, len)) {
		memcpy(b->buf + b->len, data, len);
		b->len += len;
	}
}

void ks_pb_string(struct ks_pb *b, uint32_t field, const char *s)
{
	ks_pb_bytes(b, field, s, strlen(s));
}

size_t ks_pb_begin(struct ks_pb *b, uint32_t field)
{
	put_tag(b, field, KS_PB_LEN);
	return b->len;
}

void ks_pb_end(struct ks_pb *b, size_t mark)
{
	size_t body, n;

	if (b->error || mark > b->len)
		return;
	body = b->len - mark;
	n = ks_pb_varint_size(body);
	if (!reserve(b, n))
		return;
	memmove(b->buf + mark + n, b->buf + mark, body);
	ks_pb_put_varint(b->buf + mark, body);
	b->len += n;
}
