/*
 * A kscope causal run's profile.db (causal_db.c; its tables are in
 * docs/formats.md).
 */
#ifndef KS_CAUSAL_DB_H
#define KS_CAUSAL_DB_H

#include "causal_lines.h"
#include "causal_post.h"
#include "err.h"

/* Writes path (which must not exist): the line table, every process,
 * experiment, progress point change and sample total of d, and r's
 * curves; meta: NULL-terminated key, value pairs for the meta table
 * (besides producer and schema_version), or NULL.  0, or a negative
 * errno-style code with err set; nothing is left at path on failure. */
int ks_causal_db_write(const char *path, const char *const *meta,
		       const struct ks_causal_lines *lines, const struct ks_causal_data *d,
		       const struct ks_causal_result *r, struct ks_err *err);

#endif
