/*
 * kscope report on a `kscope instrument` run: its profile.db
 * (docs/instrument.md, "profile.db") read with SQL and printed as the
 * function table (the default), the per-thread table (--threads) or the
 * call graph (--tree: instrumented runs have caller-callee edges, not
 * call paths), in text or JSON, for every thread or one (--thread TID).
 */
#include "report_instr.h"

#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "instr_db.h"
#include "textout.h"

int ks_report_instr_version(sqlite3 *db, const char *schema, const char *path,
			 struct ks_err *err)
{
	char sql[64];
	sqlite3_stmt *st = NULL;
	long long v = -1;

	snprintf(sql, sizeof(sql), "PRAGMA %s.user_version", schema);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (v == IDB_VERSION)
		return 0;
	return ks_err_set(err, -EINVAL, "%s: an instrument profile.db of schema version %lld; "
			  "this kscope reads version %d (run the program again, or use the "
			  "kscope that wrote it)", path, v, IDB_VERSION);
}

bool ks_report_instr_is(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	bool is = false;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		is = sqlite3_column_int64(st, 0) == IDB_APPLICATION_ID;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return is;
}

static int fail(sqlite3 *db, const char *path, struct ks_err *err)
{
	return ks_err_set(err, -EIO, "%s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
}

static int file_sink(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -EIO;
}

static const char *const sql[] = {
	[KS_REPORT_INSTR_FLAT] =
	"SELECT f.name, sum(s.calls), sum(s.incl_ns), sum(s.excl_ns), sum(s.sum_ns),"
	" sum(s.closed), min(s.min_ns), max(s.max_ns),"
	" CASE WHEN count(s.cpu_incl_ns) = count(*) THEN sum(s.cpu_incl_ns) END,"
	" CASE WHEN count(s.cpu_excl_ns) = count(*) THEN sum(s.cpu_excl_ns) END"
	" FROM stats s JOIN functions f ON f.id = s.function_id"
	" JOIN threads t ON t.id = s.thread_id WHERE ?1 < 0 OR t.tid = ?1"
	" GROUP BY f.name ORDER BY 3 DESC, 1",
	[KS_REPORT_INSTR_THREADS] =
	"SELECT p.pid, t.tid, (SELECT coalesce(sum(calls), 0) FROM stats WHERE thread_id = t.id),"
	" (SELECT count(*) FROM stats WHERE thread_id = t.id), t.traced, t.untraced,"
	" (SELECT f.name FROM stats s JOIN functions f ON f.id = s.function_id"
	"  WHERE s.thread_id = t.id ORDER BY s.incl_ns DESC, f.name LIMIT 1)"
	" FROM threads t JOIN processes p ON p.id = t.process_id"
	" WHERE ?1 < 0 OR t.tid = ?1 ORDER BY p.pid, t.tid",
	[KS_REPORT_INSTR_GRAPH] =
	"SELECT CASE e.caller_kind WHEN 'function' THEN c.name"
	" ELSE '(' || e.caller_kind || ')' END, f.name, sum(e.calls), sum(e.incl_ns)"
	" FROM edges e LEFT JOIN functions c ON c.id = e.caller_id"
	" JOIN functions f ON f.id = e.callee_id JOIN threads t ON t.id = e.thread_id"
	" WHERE ?1 < 0 OR t.tid = ?1 GROUP BY 1, 2 ORDER BY 4 DESC, 3 DESC, 2, 1",
};

int ks_report_instr(FILE *out, const char *path, enum ks_report_instr_view view, int64_t tid,
		    bool json, struct ks_err *err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct ks_text t;
	size_t n = 0;
	int rc = 0, step;

	if (ks_text_open(&t, file_sink, out))
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = fail(db, path, err);
		goto out;
	}
	if ((rc = ks_report_instr_version(db, "main", path, err)))
		goto out;
	if (sqlite3_prepare_v2(db, sql[view], -1, &st, NULL) != SQLITE_OK) {
		rc = fail(db, path, err);
		goto out;
	}
	sqlite3_bind_int64(st, 1, tid);
	if (tid >= 0) {
		sqlite3_stmt *q = NULL;
		bool known = false;

		if (sqlite3_prepare_v2(db, "SELECT 1 FROM threads WHERE tid = ?1", -1, &q,
				       NULL) != SQLITE_OK) {
			rc = fail(db, path, err);
			goto out;
		}
		sqlite3_bind_int64(q, 1, tid);
		known = sqlite3_step(q) == SQLITE_ROW;
		sqlite3_finalize(q);
		if (!known) {
			rc = ks_err_set(err, -ENOENT, "no thread %" PRId64 " in %s", tid, path);
			goto out;
		}
	}
	if (json)
		ks_text_printf(&t, "{\"report\": \"%s\", \"producer\": \"kscope instrument\", "
			"\"times\": \"ns\", \"rows\": [",
			view == KS_REPORT_INSTR_FLAT ? "functions"
			: view == KS_REPORT_INSTR_THREADS ? "threads" : "call graph");
	else if (view == KS_REPORT_INSTR_FLAT)
		ks_text_printf(&t, "%-32s %12s %14s %14s %14s %14s %12s %12s %12s\n", "function",
			"calls", "incl", "excl", "incl cpu", "excl cpu", "mean", "min", "max");
	else if (view == KS_REPORT_INSTR_THREADS)
		ks_text_printf(&t, "%8s %8s %12s %9s %10s %10s  %s\n", "pid", "tid", "calls",
			"functions", "traced", "untraced", "top function (incl)");
	else
		ks_text_printf(&t, "%-32s %-32s %12s %14s\n", "caller", "callee", "calls", "incl");
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);

		if (json && n)
			ks_text_puts(&t, ",");
		if (view == KS_REPORT_INSTR_FLAT) {
			int64_t closed = sqlite3_column_int64(st, 5);
			double mean = closed ? (double)sqlite3_column_int64(st, 4) / (double)closed
				      : 0.0;
			/* CPU time: NULL where a thread had no CPU clock. */
			char cpu[2][24];

			for (int k = 0; k < 2; k++) {
				if (sqlite3_column_type(st, 8 + k) == SQLITE_NULL)
					snprintf(cpu[k], sizeof(cpu[k]), json ? "null" : "-");
				else
					snprintf(cpu[k], sizeof(cpu[k]), "%lld",
						 sqlite3_column_int64(st, 8 + k));
			}
			if (json) {
				ks_text_puts(&t, "\n {\"function\": ");
				ks_text_json_str(&t, name);
				ks_text_printf(&t, ", \"calls\": %lld, \"incl\": %lld, \"excl\": %lld, "
					"\"incl_cpu\": %s, \"excl_cpu\": %s, \"mean\": %.1f, "
					"\"min\": %lld, \"max\": %lld}",
					sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
					sqlite3_column_int64(st, 3), cpu[0], cpu[1], mean,
					sqlite3_column_int64(st, 6), sqlite3_column_int64(st, 7));
			} else {
				ks_text_printf(&t, "%-32s %12lld %14lld %14lld %14s %14s %12.1f %12lld "
					"%12lld\n", name, sqlite3_column_int64(st, 1),
					sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
					cpu[0], cpu[1], mean, sqlite3_column_int64(st, 6),
					sqlite3_column_int64(st, 7));
			}
		} else if (view == KS_REPORT_INSTR_THREADS) {
			const char *top = (const char *)sqlite3_column_text(st, 6);

			if (json) {
				ks_text_printf(&t, "\n {\"pid\": %lld, \"tid\": %lld, \"calls\": %lld, "
					"\"functions\": %lld, \"traced\": %lld, \"untraced\": %lld, "
					"\"top\": ", sqlite3_column_int64(st, 0),
					sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
					sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
					sqlite3_column_int64(st, 5));
				if (top)
					ks_text_json_str(&t, top);
				else
					ks_text_puts(&t, "null");
				ks_text_puts(&t, "}");
			} else {
				ks_text_printf(&t, "%8lld %8lld %12lld %9lld %10lld %10lld  %s\n",
					sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
					sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
					sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
					top ? top : "-");
			}
		} else {
			const char *callee = (const char *)sqlite3_column_text(st, 1);

			if (json) {
				ks_text_puts(&t, "\n {\"caller\": ");
				ks_text_json_str(&t, name);
				ks_text_puts(&t, ", \"callee\": ");
				ks_text_json_str(&t, callee);
				ks_text_printf(&t, ", \"calls\": %lld, \"incl\": %lld}",
					sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
			} else {
				ks_text_printf(&t, "%-32s %-32s %12lld %14lld\n", name, callee,
					sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
			}
		}
		n++;
	}
	if (step != SQLITE_DONE) {
		rc = fail(db, path, err);
		goto out;
	}
	if (json)
		ks_text_puts(&t, "\n]}\n");
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	if (ks_text_close(&t) && !rc)
		rc = ks_err_set(err, -EIO, "writing the report: %s", strerror(EIO));
	return rc;
}
