/*
 * kscope instrument's profile.db (docs/instrument.md, "profile.db"):
 * written by kscope instrument from the runtime's counters files, and
 * by kscope merge from the ranks of an MPI run.
 */
#include "instr_db.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "profile.h"
#include "report_instr.h"
#include "trace.h"

static const char idb_schema[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER NOT NULL,"
	" exe TEXT NOT NULL, rank INTEGER NOT NULL DEFAULT -1);"
	"CREATE TABLE functions (id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL"
	" REFERENCES processes, name TEXT NOT NULL, address INTEGER NOT NULL,"
	" size INTEGER NOT NULL, instructions INTEGER NOT NULL, module TEXT NOT NULL);"
	"CREATE TABLE threads (id INTEGER PRIMARY KEY, process_id INTEGER NOT NULL"
	" REFERENCES processes, tid INTEGER NOT NULL, overflow INTEGER NOT NULL,"
	" unwound INTEGER NOT NULL, open INTEGER NOT NULL, lost INTEGER NOT NULL,"
	" traced INTEGER NOT NULL DEFAULT 0, untraced INTEGER NOT NULL DEFAULT 0);"
	"CREATE TABLE stats (thread_id INTEGER NOT NULL REFERENCES threads,"
	" function_id INTEGER NOT NULL REFERENCES functions, calls INTEGER NOT NULL,"
	" closed INTEGER NOT NULL, incl_ns INTEGER NOT NULL, excl_ns INTEGER NOT NULL,"
	" sum_ns INTEGER NOT NULL, min_ns INTEGER NOT NULL, max_ns INTEGER NOT NULL,"
	" cpu_incl_ns INTEGER, cpu_excl_ns INTEGER, PRIMARY KEY (thread_id, function_id));"
	"CREATE TABLE edges (thread_id INTEGER NOT NULL REFERENCES threads,"
	" caller_id INTEGER REFERENCES functions, caller_kind TEXT NOT NULL"
	" CHECK (caller_kind IN ('function', 'not instrumented', 'signal')),"
	" callee_id INTEGER NOT NULL REFERENCES functions, calls INTEGER NOT NULL,"
	" incl_ns INTEGER NOT NULL);"
	"CREATE TABLE calls (thread_id INTEGER NOT NULL REFERENCES threads,"
	" function_id INTEGER NOT NULL REFERENCES functions, depth INTEGER NOT NULL,"
	" start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL);";

static const char idb_finish[] =
	"CREATE INDEX calls_by_thread ON calls (thread_id, start_ns);"
	"CREATE INDEX edges_by_callee ON edges (callee_id);"
	"CREATE VIEW function_totals AS SELECT f.name AS name, sum(s.calls) AS calls,"
	" sum(s.closed) AS closed, sum(s.incl_ns) AS incl_ns, sum(s.excl_ns) AS excl_ns,"
	" sum(s.sum_ns) AS sum_ns, min(s.min_ns) AS min_ns, max(s.max_ns) AS max_ns,"
	" CASE WHEN count(s.cpu_incl_ns) = count(*) THEN sum(s.cpu_incl_ns) END AS cpu_incl_ns,"
	" CASE WHEN count(s.cpu_excl_ns) = count(*) THEN sum(s.cpu_excl_ns) END AS cpu_excl_ns"
	" FROM stats s JOIN functions f ON f.id = s.function_id GROUP BY f.name;";

static const char *const idb_sql[IDB_NSTMT] = {
	"INSERT INTO processes (pid, exe, rank) VALUES (?1, ?2, ?3)",
	"INSERT INTO functions (process_id, name, address, size, instructions, module)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	"INSERT INTO threads (process_id, tid, overflow, unwound, open, lost)"
	" VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	"INSERT INTO stats VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
	"INSERT INTO edges VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	"INSERT INTO calls VALUES (?1, ?2, ?3, ?4, ?5)",
	"UPDATE threads SET traced = ?2, untraced = ?3 WHERE id = ?1",
};

static int idb_fail(struct ks_idb *d, struct ks_err *err, const char *what)
{
	return ks_err_set(err, -EIO, "%s: %s: %s", d->f.path, what, sqlite3_errmsg(d->f.db));
}

int ks_idb_open(struct ks_idb *d, const char *path, const char *prog, struct ks_err *err)
{
	int rc = ks_store_file_create(&d->f, path, IDB_APPLICATION_ID, IDB_VERSION, err);
	char sql[64];

	if (rc)
		return rc;
	d->open = true;
	snprintf(sql, sizeof(sql), "%d", IDB_VERSION);
	if (sqlite3_exec(d->f.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(d->f.db, idb_schema, NULL, NULL, NULL) != SQLITE_OK)
		return idb_fail(d, err, "creating the tables");
	for (int i = 0; i < IDB_NSTMT; i++)
		if (sqlite3_prepare_v2(d->f.db, idb_sql[i], -1, &d->st[i], NULL) != SQLITE_OK)
			return idb_fail(d, err, "preparing a statement");
	{
		static const char *const keys[] = { "producer", "schema_version", "program" };
		const char *vals[] = { "kscope instrument", sql, prog };
		sqlite3_stmt *m = NULL;

		if (sqlite3_prepare_v2(d->f.db, "INSERT INTO meta VALUES (?1, ?2)", -1, &m,
				       NULL) != SQLITE_OK)
			return idb_fail(d, err, "preparing a statement");
		for (int i = 0; i < 3; i++) {
			sqlite3_bind_text(m, 1, keys[i], -1, SQLITE_STATIC);
			sqlite3_bind_text(m, 2, vals[i], -1, SQLITE_STATIC);
			if (sqlite3_step(m) != SQLITE_DONE) {
				sqlite3_finalize(m);
				return idb_fail(d, err, "writing meta");
			}
			sqlite3_reset(m);
		}
		sqlite3_finalize(m);
	}
	return 0;
}

/* Runs statement i with n integer parameters (text where text[k] is not
 * NULL); returns the new row's id, or -1 with err set. */
int64_t ks_idb_put(struct ks_idb *d, int i, int n, const int64_t *v, const char *const *text,
		       struct ks_err *err)
{
	sqlite3_stmt *st = d->st[i];

	for (int k = 0; k < n; k++) {
		if (text && text[k])
			sqlite3_bind_text(st, k + 1, text[k], -1, SQLITE_TRANSIENT);
		else if (v[k] == IDB_NULL)
			sqlite3_bind_null(st, k + 1);
		else
			sqlite3_bind_int64(st, k + 1, v[k]);
	}
	if (sqlite3_step(st) != SQLITE_DONE) {
		idb_fail(d, err, "writing a row");
		sqlite3_reset(st);
		return -1;
	}
	sqlite3_reset(st);
	return sqlite3_last_insert_rowid(d->f.db);
}

void ks_idb_close(struct ks_idb *d)
{
	for (int i = 0; i < IDB_NSTMT; i++) {
		sqlite3_finalize(d->st[i]);
		d->st[i] = NULL;
	}
	if (d->open)
		ks_store_file_abort(&d->f);
	d->open = false;
}

int ks_idb_commit(struct ks_idb *d, struct ks_err *err)
{
	for (int i = 0; i < IDB_NSTMT; i++) {
		sqlite3_finalize(d->st[i]);
		d->st[i] = NULL;
	}
	if (sqlite3_exec(d->f.db, idb_finish, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(d->f.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int rc = idb_fail(d, err, "finishing the database");

		ks_idb_close(d);
		return rc;
	}
	d->open = false;
	return ks_store_file_commit(&d->f, err);
}


int ks_idb_trace_call(struct ks_profile *p, uint32_t thread, const char *name, uint32_t depth,
		      uint64_t t0, uint64_t t1)
{
	uint32_t sid = ks_profile_intern(p, name);
	struct ks_pslice *sl;
	struct ks_pthread *t;
	struct ks_pprocess *pr;

	if (sid == KS_NONE || !(sl = ks_profile_push(p, slices)))
		return -ENOMEM;
	sl->thread = thread;
	sl->name = sid;
	sl->kind = KS_SLICE_CALL;
	sl->depth = depth;
	sl->start = t0;
	sl->end = t1 < t0 ? t0 : t1;
	sl->peer = -1;
	t = &p->threads[thread];
	pr = &p->processes[t->process];
	if (!t->start || t0 < t->start)
		t->start = t0;
	if (sl->end > t->end)
		t->end = sl->end;
	if (!pr->start || t0 < pr->start)
		pr->start = t0;
	if (sl->end > pr->end)
		pr->end = sl->end;
	return 0;
}

/* ------------------------------------------------------------------ */
/* kscope merge                                                        */
/* ------------------------------------------------------------------ */

/* Copies one rank's database, attached as r, into d: every id moved past
 * those already there, the rank set on its processes. */
static int merge_one(struct ks_idb *d, int32_t rank, struct ks_err *err)
{
	static const char *const copy[] = {
		"INSERT INTO processes SELECT id + ?1, pid, exe, ?4 FROM r.processes",
		"INSERT INTO functions SELECT id + ?2, process_id + ?1, name, address,"
		" size, instructions, module FROM r.functions",
		"INSERT INTO threads SELECT id + ?3, process_id + ?1, tid, overflow,"
		" unwound, open, lost, traced, untraced FROM r.threads",
		"INSERT INTO stats SELECT thread_id + ?3, function_id + ?2, calls, closed,"
		" incl_ns, excl_ns, sum_ns, min_ns, max_ns, cpu_incl_ns, cpu_excl_ns FROM r.stats",
		"INSERT INTO edges SELECT thread_id + ?3, caller_id + ?2, caller_kind,"
		" callee_id + ?2, calls, incl_ns FROM r.edges",
		"INSERT INTO calls SELECT thread_id + ?3, function_id + ?2, depth,"
		" start_ns, end_ns FROM r.calls",
	};
	static const char *const maxq[] = {
		"SELECT coalesce(max(id), 0) FROM processes",
		"SELECT coalesce(max(id), 0) FROM functions",
		"SELECT coalesce(max(id), 0) FROM threads",
	};
	long long off[3];

	for (int i = 0; i < 3; i++) {
		sqlite3_stmt *st = NULL;

		if (sqlite3_prepare_v2(d->f.db, maxq[i], -1, &st, NULL) != SQLITE_OK ||
		    sqlite3_step(st) != SQLITE_ROW) {
			sqlite3_finalize(st);
			return idb_fail(d, err, "reading the merged ids");
		}
		off[i] = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	for (size_t i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
		sqlite3_stmt *st = NULL;
		int ok;

		if (sqlite3_prepare_v2(d->f.db, copy[i], -1, &st, NULL) != SQLITE_OK) {
			sqlite3_finalize(st);
			return idb_fail(d, err, "copying a rank");
		}
		/* ?1..?3 the id offsets, ?4 the rank (unused ones are harmless). */
		for (int k = 1; k <= sqlite3_bind_parameter_count(st) && k <= 4; k++)
			sqlite3_bind_int64(st, k, k == 4 ? rank : off[k - 1]);
		ok = sqlite3_step(st) == SQLITE_DONE;
		sqlite3_finalize(st);
		if (!ok)
			return idb_fail(d, err, "copying a rank");
	}
	return 0;
}

/* The merged traces: the calls table as slices, a process per rank. */
static int merge_trace(sqlite3 *db, const char *dir, struct ks_err *err)
{
	struct ks_profile p;
	sqlite3_stmt *st = NULL;
	char path[4096];
	int rc;

	if ((rc = ks_profile_init(&p, err)))
		return rc;
	if (sqlite3_prepare_v2(db, "SELECT p.id, p.pid, p.exe, p.rank FROM processes p ORDER BY"
			       " p.id", -1, &st, NULL) != SQLITE_OK)
		goto sqlfail;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct ks_pprocess *pr = ks_profile_push(&p, processes);

		if (!pr)
			goto nomem;
		pr->pid = (int32_t)sqlite3_column_int64(st, 1);
		pr->rank = (int32_t)sqlite3_column_int64(st, 3);
		pr->command = ks_profile_intern(&p, (const char *)sqlite3_column_text(st, 2));
	}
	sqlite3_finalize(st);
	/* Processes and threads are numbered from 1 in the database, in the
	 * order they were copied: index = id - 1. */
	if (sqlite3_prepare_v2(db, "SELECT id, process_id, tid FROM threads ORDER BY id", -1,
			       &st, NULL) != SQLITE_OK)
		goto sqlfail;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct ks_pthread *t = ks_profile_push(&p, threads);

		if (!t)
			goto nomem;
		t->process = (uint32_t)(sqlite3_column_int64(st, 1) - 1);
		t->tid = (int32_t)sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT c.thread_id, f.name, c.depth, c.start_ns, c.end_ns"
			       " FROM calls c JOIN functions f ON f.id = c.function_id", -1, &st,
			       NULL) != SQLITE_OK)
		goto sqlfail;
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t thread = sqlite3_column_int64(st, 0) - 1;
		const char *name = (const char *)sqlite3_column_text(st, 1);

		if (thread < 0 || (uint64_t)thread >= p.n_threads || !name ||
		    ks_idb_trace_call(&p, (uint32_t)thread, name,
				      (uint32_t)sqlite3_column_int64(st, 2),
				      (uint64_t)sqlite3_column_int64(st, 3),
				      (uint64_t)sqlite3_column_int64(st, 4)))
			goto nomem;
	}
	sqlite3_finalize(st);
	st = NULL;
	rc = 0;
	if (p.n_slices) {
		struct ks_rundir rd = { .path = path, .dirfd = -1 };

		snprintf(path, sizeof(path), "%s", dir);
		rd.dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (rd.dirfd < 0) {
			rc = ks_err_set(err, -errno, "cannot open '%s': %s", dir, strerror(errno));
		} else {
			rc = ks_store_write_trace(&rd, "trace.perfetto-trace",
						  ks_trace_write_perfetto, &p, err);
			close(rd.dirfd);
		}
	}
	ks_profile_free(&p);
	return rc;
sqlfail:
	rc = ks_err_set(err, -EIO, "reading the merged database: %s", sqlite3_errmsg(db));
	sqlite3_finalize(st);
	ks_profile_free(&p);
	return rc;
nomem:
	sqlite3_finalize(st);
	ks_profile_free(&p);
	return ks_err_set(err, -ENOMEM, "out of memory, or a damaged database");
}

int ks_idb_merge(const char *dir, const char *const *dbs, const int32_t *ranks, size_t n,
		 struct ks_err *err)
{
	struct ks_idb d = { .f = { .fd = -1 } };
	char path[4096], *program = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/profile.db", dir);
	{
		/* The program, from the first rank's meta. */
		sqlite3 *db = NULL;
		sqlite3_stmt *st = NULL;

		if (sqlite3_open_v2(dbs[0], &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
		    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'program'", -1, &st,
				       NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			program = strdup((const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	rc = ks_idb_open(&d, path, program ? program : "?", err);
	free(program);
	if (rc)
		goto out;
	for (size_t i = 0; i < n && !rc; i++) {
		/* A database is attached and detached between transactions; the
		 * file has no final name until the end, so committing as it
		 * goes leaves nothing half-written under it. */
		sqlite3_stmt *at = NULL;
		bool ok = sqlite3_exec(d.f.db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK &&
			  sqlite3_prepare_v2(d.f.db, "ATTACH DATABASE ?1 AS r", -1, &at,
					     NULL) == SQLITE_OK &&
			  sqlite3_bind_text(at, 1, dbs[i], -1, SQLITE_STATIC) == SQLITE_OK &&
			  sqlite3_step(at) == SQLITE_DONE;

		sqlite3_finalize(at);
		if (!ok || sqlite3_exec(d.f.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
			rc = ks_err_set(err, -EIO, "%s: cannot read it: %s", dbs[i],
					sqlite3_errmsg(d.f.db));
			break;
		}
		rc = ks_report_instr_version(d.f.db, "r", dbs[i], err);
		if (!rc)
			rc = merge_one(&d, ranks[i], err);
		if (!rc && sqlite3_exec(d.f.db, "COMMIT; DETACH DATABASE r; BEGIN", NULL, NULL,
					NULL) != SQLITE_OK)
			rc = idb_fail(&d, err, "detaching a rank");
	}
	if (rc)
		goto out;
	{
		char sql[128];

		snprintf(sql, sizeof(sql), "INSERT INTO meta VALUES ('ranks', '%zu')", n);
		if (sqlite3_exec(d.f.db, sql, NULL, NULL, NULL) != SQLITE_OK) {
			rc = idb_fail(&d, err, "writing meta");
			goto out;
		}
	}
	rc = merge_trace(d.f.db, dir, err);
	if (rc)
		goto out;
	rc = ks_idb_commit(&d, err);
	if (!rc && chmod(path, KS_DELIVERABLE_MODE) != 0)
		rc = ks_err_set(err, -errno, "cannot make %s read-only: %s", path, strerror(errno));
out:
	ks_idb_close(&d);
	return rc;
}
