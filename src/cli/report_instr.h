/*
 * kscope report on the profile.db of a `kscope instrument` run
 * (report_instr.c).
 */
#ifndef KS_CLI_REPORT_INSTR_H
#define KS_CLI_REPORT_INSTR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "err.h"

enum ks_report_instr_view {
	KS_REPORT_INSTR_FLAT,    /* per function, every thread added */
	KS_REPORT_INSTR_THREADS, /* per thread */
	KS_REPORT_INSTR_GRAPH,   /* caller-callee edges */
};

/* Whether path is a kscope instrument profile.db (its application_id). */
bool ks_report_instr_is(const char *path);
/* 0 when schema ("main", or an attached one) of db (read from path) is
 * of this kscope's version (IDB_VERSION, instr_db.h); else -EINVAL, err
 * naming both versions. */
int ks_report_instr_version(sqlite3 *db, const char *schema, const char *path,
			    struct ks_err *err);
/* Prints one view of it to out; tid >= 0 keeps one thread's rows (-ENOENT
 * when it has none). */
int ks_report_instr(FILE *out, const char *path, enum ks_report_instr_view view, int64_t tid,
		    bool json, struct ks_err *err);

#endif
