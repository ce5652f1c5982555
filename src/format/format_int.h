/*
 * Private to src/format: helpers shared by the container writer, reader
 * and payload checks.  No other module includes this file.
 */
#ifndef KS_FORMAT_INT_H
#define KS_FORMAT_INT_H

#include <stdint.h>

#include <kscope/vizbin.h>

/* Encodes a block header into h (KS_VB_HEADER_SIZE bytes). */
void ks_vb_put_header(unsigned char *h, uint64_t content_size, unsigned type,
		      unsigned padding, unsigned version);

/* Fills err (which may be NULL) and returns code. */
int ks_vb_fail(struct ks_vb_error *err, int code, uint32_t block,
	       uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
