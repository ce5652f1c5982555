/*
 * A kscope causal run's profile.db: what the run found, as SQLite tables
 * (docs/formats.md, "Causal run directories"), for queries and tools the
 * CSV does not serve.  Written as the other commands' profile.db are
 * (ks_store_file: exclusive, never through a link, under a temporary
 * name until complete), with its own application_id, "KSCC", so that a
 * reader tells it from a sample run's ("KSCP") or an instrument run's
 * ("KSCI") database.
 *
 *   meta(key, value)                       producer, schema_version, ...
 *   lines(id, file, line, function)        the line ids of every table
 *   processes(id, pid, period_ns, start_ns, end_ns, sampler)
 *   experiments(id, process, line, speedup_pct, wall_ns, delay_ns,
 *               samples)                   as the runtime recorded them
 *   progress(experiment, point, kind, delta, arrivals, departures,
 *            difference)                   each point's change in each
 *   samples(process, line, count)          each process's total per line
 *   curves(rank, point, line, line_speedup_pct, program_speedup_pct,
 *          ci_low_pct, ci_high_pct, experiments, visits, effective_s,
 *          impact_pct)                     the analysis, best first
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "causal_db.h"
#include "store.h"

#define CDB_APPLICATION_ID 0x4b534343u /* "KSCC" */
#define CDB_VERSION 1

static const char schema[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
	"CREATE TABLE lines (id INTEGER PRIMARY KEY, file TEXT NOT NULL,"
	" line INTEGER NOT NULL, function TEXT);"
	"CREATE TABLE processes (id INTEGER PRIMARY KEY, pid INTEGER, period_ns INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, sampler TEXT);"
	"CREATE TABLE experiments (id INTEGER PRIMARY KEY, process INTEGER NOT NULL,"
	" line INTEGER NOT NULL, speedup_pct INTEGER NOT NULL, wall_ns INTEGER NOT NULL,"
	" delay_ns INTEGER NOT NULL, samples INTEGER NOT NULL);"
	"CREATE TABLE progress (experiment INTEGER NOT NULL, point TEXT NOT NULL,"
	" kind TEXT NOT NULL, delta INTEGER, arrivals INTEGER, departures INTEGER,"
	" difference INTEGER);"
	"CREATE TABLE samples (process INTEGER NOT NULL, line INTEGER NOT NULL,"
	" count INTEGER NOT NULL);"
	"CREATE TABLE curves (rank INTEGER NOT NULL, point TEXT NOT NULL,"
	" line INTEGER NOT NULL, line_speedup_pct INTEGER NOT NULL,"
	" program_speedup_pct REAL, ci_low_pct REAL, ci_high_pct REAL,"
	" experiments INTEGER, visits INTEGER, effective_s REAL, impact_pct REAL);";

struct cdb {
	struct ks_store_file f;
	sqlite3_stmt *st;
	struct ks_err *err;
};

static int fail(struct cdb *c, const char *what)
{
	return ks_err_set(c->err, -EIO, "%s: %s: %s", c->f.path, what, sqlite3_errmsg(c->f.db));
}

static int prepare(struct cdb *c, const char *sql)
{
	sqlite3_finalize(c->st);
	c->st = NULL;
	return sqlite3_prepare_v2(c->f.db, sql, -1, &c->st, NULL) == SQLITE_OK ? 0
	       : fail(c, "preparing a statement");
}

/* Binds v[0..n) (an int64, a double, text or NULL per kind[k]: 'i', 'd',
 * 't', '-') and runs the prepared statement. */
static int put(struct cdb *c, const char *kind, const int64_t *iv, const double *dv,
	       const char *const *tv)
{
	for (int k = 0; kind[k]; k++) {
		if (kind[k] == 'i')
			sqlite3_bind_int64(c->st, k + 1, iv[k]);
		else if (kind[k] == 'd' && !isnan(dv[k]))
			sqlite3_bind_double(c->st, k + 1, dv[k]);
		else if (kind[k] == 't' && tv[k])
			sqlite3_bind_text(c->st, k + 1, tv[k], -1, SQLITE_TRANSIENT);
		else
			sqlite3_bind_null(c->st, k + 1);
	}
	if (sqlite3_step(c->st) != SQLITE_DONE) {
		sqlite3_reset(c->st);
		return fail(c, "writing a row");
	}
	sqlite3_reset(c->st);
	sqlite3_clear_bindings(c->st);
	return 0;
}

static int write_meta(struct cdb *c, const char *const *meta)
{
	int rc = prepare(c, "INSERT INTO meta VALUES (?1, ?2)");
	char version[16];
	const char *row[2];

	snprintf(version, sizeof(version), "%d", CDB_VERSION);
	row[0] = "producer";
	row[1] = "kscope causal";
	if (!rc)
		rc = put(c, "tt", NULL, NULL, row);
	row[0] = "schema_version";
	row[1] = version;
	if (!rc)
		rc = put(c, "tt", NULL, NULL, row);
	for (size_t i = 0; !rc && meta && meta[i] && meta[i + 1]; i += 2)
		rc = put(c, "tt", NULL, NULL, meta + i);
	return rc;
}

static int write_lines(struct cdb *c, const struct ks_causal_lines *l)
{
	int rc = prepare(c, "INSERT INTO lines VALUES (?1, ?2, ?3, ?4)");

	for (size_t i = 0; !rc && i < l->nlines; i++) {
		int64_t iv[4] = { (int64_t)i, 0, l->lines[i].line, 0 };
		const char *tv[4] = { NULL, l->lines[i].file, NULL, l->lines[i].function };

		rc = put(c, "itit", iv, NULL, tv);
	}
	return rc;
}

static int write_data(struct cdb *c, const struct ks_causal_data *d)
{
	int rc = 0;

	for (size_t p = 0; !rc && p < d->nprocesses; p++) {
		const struct ks_causal_process *pr = &d->processes[p];
		int64_t iv[7] = { (int64_t)p, (int64_t)pr->pid, (int64_t)pr->period_ns,
				  (int64_t)pr->start_ns, (int64_t)pr->end_ns, 0, 0 };
		const char *tv[6] = { NULL, NULL, NULL, NULL, NULL,
				      pr->coarse ? "timer" : "perf" };

		rc = prepare(c, "INSERT INTO processes VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
		if (!rc)
			rc = put(c, pr->ended ? "iiiiit" : "iiii-t", iv, NULL, tv);
		for (size_t e = pr->first_experiment;
		     !rc && e < pr->first_experiment + pr->nexperiments; e++) {
			const struct ks_causal_experiment *x = &d->experiments[e];
			int64_t ev[7] = { (int64_t)e, (int64_t)p, x->line, x->speedup_pct,
					  (int64_t)x->wall_ns, (int64_t)x->delay_ns,
					  (int64_t)x->samples };

			rc = prepare(c, "INSERT INTO experiments VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
			if (!rc)
				rc = put(c, "iiiiiii", ev, NULL, NULL);
			if (!rc)
				rc = prepare(c, "INSERT INTO progress VALUES "
					     "(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
			for (size_t k = x->first_point; !rc && k < x->first_point + x->npoints;
			     k++) {
				const struct ks_causal_pointval *pv = &d->points[k];
				bool tp = pv->kind == KS_CAUSAL_THROUGHPUT;
				int64_t pv_i[7] = { (int64_t)e, 0, 0, (int64_t)pv->delta,
						    (int64_t)pv->arrivals, (int64_t)pv->departures,
						    pv->difference };
				const char *pv_t[3] = { NULL, d->names[pv->name],
							tp ? "throughput" : "latency" };

				rc = put(c, tp ? "itti---" : "itt-iii", pv_i, NULL, pv_t);
			}
		}
		if (!rc)
			rc = prepare(c, "INSERT INTO samples VALUES (?1, ?2, ?3)");
		for (size_t s = pr->first_samples; !rc && s < pr->first_samples + pr->nsamples;
		     s++) {
			int64_t sv[3] = { (int64_t)p, d->samples[s].line, (int64_t)d->samples[s].count };

			rc = put(c, "iii", sv, NULL, NULL);
		}
	}
	return rc;
}

static int write_curves(struct cdb *c, const struct ks_causal_result *r)
{
	int rc = prepare(c, "INSERT INTO curves VALUES "
			 "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");

	for (size_t i = 0; !rc && i < r->ncurves; i++) {
		const struct ks_causal_curve *cv = &r->curves[i];

		for (size_t k = 0; !rc && k < cv->n; k++) {
			const struct ks_causal_point_result *p = &cv->v[k];
			int64_t iv[11] = { (int64_t)i + 1, 0, cv->line, p->line_speedup_pct, 0, 0, 0,
					   (int64_t)p->experiments, (int64_t)p->visits, 0, 0 };
			double dv[11] = { 0, 0, 0, 0, p->program_speedup_pct, p->ci_low_pct,
					  p->ci_high_pct, 0, 0, p->effective_s, cv->impact_pct };
			const char *tv[11] = { NULL, cv->point };

			rc = put(c, "itiidddiidd", iv, dv, tv);
		}
	}
	return rc;
}

int ks_causal_db_write(const char *path, const char *const *meta,
		       const struct ks_causal_lines *lines, const struct ks_causal_data *d,
		       const struct ks_causal_result *r, struct ks_err *err)
{
	struct cdb c = { .st = NULL, .err = err };
	int rc = ks_store_file_create(&c.f, path, CDB_APPLICATION_ID, CDB_VERSION, err);

	if (rc)
		return rc;
	if (sqlite3_exec(c.f.db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(c.f.db, schema, NULL, NULL, NULL) != SQLITE_OK)
		rc = fail(&c, "creating the tables");
	if (!rc)
		rc = write_meta(&c, meta);
	if (!rc)
		rc = write_lines(&c, lines);
	if (!rc)
		rc = write_data(&c, d);
	if (!rc)
		rc = write_curves(&c, r);
	sqlite3_finalize(c.st);
	if (!rc && sqlite3_exec(c.f.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = fail(&c, "committing");
	if (!rc)
		return ks_store_file_commit(&c.f, err);
	ks_store_file_abort(&c.f);
	return rc;
}
