/*
 * kscope instrument's profile.db (instr_db.c; schema in
 * docs/instrument.md): written row by row by kscope instrument, and
 * combined from the ranks of an MPI run by kscope merge.
 */
#ifndef KS_CLI_INSTR_DB_H
#define KS_CLI_INSTR_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "err.h"
#include "profile.h"
#include "store.h"

#define IDB_APPLICATION_ID 0x4b534349u /* "KSCI" */
#define IDB_VERSION 2
#define IDB_NULL INT64_MIN  /* a NULL for ks_idb_put */

/* The prepared inserts of ks_idb_put, by statement. */
enum { IDB_PROCESS, IDB_FUNCTION, IDB_THREAD, IDB_STAT, IDB_EDGE, IDB_CALL, IDB_TRACE,
       IDB_NSTMT };

struct ks_idb {
	struct ks_store_file f;
	sqlite3_stmt *st[IDB_NSTMT];
	bool open;
};

/* A new profile.db at path (which must not exist), its tables made and
 * meta written (program: the program's path), inside one transaction. */
int ks_idb_open(struct ks_idb *d, const char *path, const char *program, struct ks_err *err);
/* Runs statement i with n parameters: integers, text where text[k] is not
 * NULL, NULL where v[k] is IDB_NULL; the new row's id, or -1 (err set). */
int64_t ks_idb_put(struct ks_idb *d, int i, int n, const int64_t *v, const char *const *text,
		   struct ks_err *err);
/* Indexes, views, commit, and the file's final name. */
int ks_idb_commit(struct ks_idb *d, struct ks_err *err);
/* Drops an unfinished database (nothing after a commit). */
void ks_idb_close(struct ks_idb *d);

/* A traced call as a call slice of thread (an index into p's threads),
 * widening the thread's and its process's span; -ENOMEM. */
int ks_idb_trace_call(struct ks_profile *p, uint32_t thread, const char *name, uint32_t depth,
		      uint64_t t0, uint64_t t1);

/* kscope merge: DIR/profile.db from the ranks' databases dbs (ranks[i]
 * the rank of dbs[i]), each one's ids moved past the previous ones' and
 * its processes given their rank, and DIR/trace.perfetto-trace from the
 * calls, a process track per rank; both read-only. */
int ks_idb_merge(const char *dir, const char *const *dbs, const int32_t *ranks, size_t n,
		 struct ks_err *err);

#endif
