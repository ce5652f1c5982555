/*
 * A minimal protocol-buffer encoder: the few wire types the Perfetto
 * trace writer needs (varints, zigzag varints, 64-bit doubles,
 * length-delimited strings and nested messages), appended to one growable
 * byte buffer.
 *
 * It is hand-written rather than generated because the encoding is small
 * and kscope only writes, never reads, a handful of Perfetto messages
 * (and pprof's Profile, src/sample/store/export.c);
 * protoc-c or nanopb would add a code generator to the build for ~150
 * lines of code (see docs/architecture.md).  Nested messages are written
 * in place: ks_pb_begin() writes the tag and remembers where the body
 * starts, ks_pb_end() then moves the body up by the size of its length
 * varint and writes the length, so every varint is minimal.  Messages
 * written this way stay small (one TracePacket), so the move is cheap.
 *
 * Allocation failures are sticky: the buffer records -ENOMEM in `error`,
 * later calls do nothing, and the caller checks once at the end.  Private
 * to src/sample/trace and the exports of src/sample/store.
 */
#ifndef KS_SAMPLE_TRACE_PB_H
#define KS_SAMPLE_TRACE_PB_H

#include <stddef.h>
#include <stdint.h>

enum ks_pb_wire {
	KS_PB_VARINT = 0,
	KS_PB_I64 = 1,
	KS_PB_LEN = 2,
	KS_PB_I32 = 5,
};

struct ks_pb {
	uint8_t *buf;          /* owned */
	size_t len, cap;
	int error;             /* -ENOMEM after a failed allocation, else 0 */
};

/* Frees the buffer and empties b (a zeroed struct ks_pb is empty). */
void ks_pb_free(struct ks_pb *b);

/* Field writers: tag (field << 3 | wire type), then the value. */
void ks_pb_uint(struct ks_pb *b, uint32_t field, uint64_t v);     /* uint32/64, bool, enum */
void ks_pb_int(struct ks_pb *b, uint32_t field, int64_t v);       /* int32/int64 */
void ks_pb_sint(struct ks_pb *b, uint32_t field, int64_t v);      /* sint32/sint64 */
void ks_pb_double(struct ks_pb *b, uint32_t field, double v);
void ks_pb_bytes(struct ks_pb *b, uint32_t field, const void *data, size_t len);
void ks_pb_string(struct ks_pb *b, uint32_t field, const char *s);

/* A bare varint, for the elements of a packed repeated field written
 * between ks_pb_begin() and ks_pb_end(). */
void ks_pb_varint(struct ks_pb *b, uint64_t v);

/* Starts a nested message in field; returns the mark to hand to
 * ks_pb_end() when its fields are written.  Nested begin/end pairs must be
 * properly nested. */
size_t ks_pb_begin(struct ks_pb *b, uint32_t field);
void ks_pb_end(struct ks_pb *b, size_t mark);

/* Raw encodings, for tests and for callers framing messages themselves. */
size_t ks_pb_varint_size(uint64_t v);
size_t ks_pb_put_varint(uint8_t *out, uint64_t v);  /* out has >= 10 bytes */
static inline uint64_t ks_pb_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (v < 0 ? UINT64_MAX : 0);
}

#endif
