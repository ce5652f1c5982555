/*
 * Buffered text output for kscope's deliverables, with the CSV and JSON
 * escaping they share.
 *
 * A struct ks_text gathers text in a 64 KiB buffer and hands it to a sink
 * (a deliverable file, a visualize_data.bin block being streamed) when
 * the buffer is full and at ks_text_close.  It exists because a
 * deliverable of half a million rows written field by field straight to
 * a file costs a system call per field; and because the CSV quoting and
 * the JSON string escaping must be the same in every deliverable.  The
 * first error of the sink is kept and every later call does nothing; the
 * writer returns it at ks_text_close (a ks_outfile sink also keeps it
 * for ks_outfile_commit).
 *
 * CSV as RFC 4180 has it: comma separators, a field with a comma, quote or
 * line break quoted.  An unknown number is an empty field, never a zero.
 */
#ifndef KS_TEXTOUT_H
#define KS_TEXTOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "outdir.h"

#define KS_TEXT_BUF_SIZE (64 * 1024)

/* Receives len bytes; 0, or a negative errno-style code. */
typedef int (*ks_text_sink_fn)(void *ctx, const void *buf, size_t len);

struct ks_text {
	ks_text_sink_fn sink;
	void *ctx;
	char *buf;       /* KS_TEXT_BUF_SIZE bytes (owned) */
	size_t len;
	int error;       /* first error, negative errno-style; 0 if none */
};

/* Starts a writer to sink; -ENOMEM. */
int ks_text_open(struct ks_text *t, ks_text_sink_fn sink, void *ctx);
/* Starts a writer to of (through ks_outfile_write). */
int ks_text_open_outfile(struct ks_text *t, struct ks_outfile *of);
/* Hands what is buffered to the sink; the first error. */
int ks_text_flush(struct ks_text *t);
/* Flushes and frees the buffer; the first error of the writer's life. */
int ks_text_close(struct ks_text *t);

void ks_text_put(struct ks_text *t, const void *s, size_t n);
void ks_text_puts(struct ks_text *t, const char *s);
void ks_text_printf(struct ks_text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Decimal integers, formatted without printf (the hot path of large
 * deliverables). */
void ks_text_u64(struct ks_text *t, uint64_t v);
void ks_text_i64(struct ks_text *t, int64_t v);

/* ---- JSON ---- */

/* s as a JSON string: quotes, backslashes and control characters escaped,
 * valid UTF-8 passed through, and a byte that is not part of valid UTF-8
 * written as \u00XX, so the output is always valid JSON in UTF-8. */
void ks_text_json_str(struct ks_text *t, const char *s);
/* v with prec decimals, or null when it is not finite. */
void ks_text_json_num(struct ks_text *t, double v, int prec);

/* ---- CSV ---- */

/* A string field, quoted when it must be; preceded by a comma unless
 * first. */
void ks_csv_str(struct ks_text *t, bool first, const char *s);
/* ",v" with prec decimals; "," alone when v is not finite (unknown). */
void ks_csv_num(struct ks_text *t, double v, int prec);
/* ",v"; "," alone when v is negative (unknown). */
void ks_csv_int(struct ks_text *t, long long v);
/* ",v" for a count. */
void ks_csv_u64(struct ks_text *t, uint64_t v);
/* Ends the row. */
void ks_csv_end(struct ks_text *t);

#endif
