/*
 * Reading raw sample files (raw.h): open a .ksraw file, check its header,
 * and walk its records.  Every record is checked against the bytes that
 * remain before it is handed out; the walk stops at the first record that
 * is incomplete or malformed (a process killed mid-write) and says where.
 */
#ifndef KS_SAMPLE_RAW_READ_H
#define KS_SAMPLE_RAW_READ_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "raw.h"

struct ks_raw_file {
	const unsigned char *data; /* the whole file, mapped */
	size_t size;
	const struct ks_raw_file_header *hdr;
	char path[4096];
};

/* A position in a file: top-level records, or records inside a chunk. */
struct ks_raw_iter {
	const unsigned char *p, *end;
	int32_t tid;           /* inside a chunk: its thread, else 0 */
};

/* Maps path and checks its header.  Returns 0 or -errno with err set. */
int ks_raw_open(const char *path, struct ks_raw_file *f, struct ks_err *err);
void ks_raw_close(struct ks_raw_file *f);

/* Top-level records of f. */
void ks_raw_iter_file(const struct ks_raw_file *f, struct ks_raw_iter *it);
/* The records inside chunk c. */
void ks_raw_iter_chunk(const struct ks_raw_chunk *c, struct ks_raw_iter *it);
/* The next record, or NULL at the end.  *bad is set (and the walk ends)
 * when the remaining bytes do not hold a well-formed record: the number
 * of bytes left unread. */
const struct ks_raw_rec *ks_raw_next(struct ks_raw_iter *it, size_t *bad);

/* A record's string field, bounded by the record: NULL if it has no NUL
 * inside the record. */
const char *ks_raw_string(const struct ks_raw_rec *r, const char *field);

#endif
