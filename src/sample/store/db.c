/*
 * profile.db: the SQLite database that holds a `kscope sample` profile.
 * ks_store_write turns a struct ks_profile (profile.h) into tables, one
 * per array of the model, and ks_store_read turns them back into an equal
 * profile; the schema and the reasons behind it are documented in
 * docs/profile-db.md, which quotes the CREATE statements of this file.
 *
 * Crash safety comes from the file system, not from SQLite's journal: the
 * database is built under a hidden temporary name in the same directory
 * (".NAME.<pid>.part", mode 0640) with the journal off, flushed to disk,
 * and only then given its final name with a rename that refuses to
 * replace an existing file.  A writer killed at any moment therefore
 * leaves either no file under the final name or a complete one, and a
 * complete file needs no -journal or -wal companion to be read (a reader
 * with read-only access to a hot journal could not even open it).
 * Without a journal the build is also as fast as SQLite gets: a few large
 * transactions of prepared inserts, indexes built once the data is in.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"
#include "store_int.h"

#define SCHEMA_VERSION 3
/* The oldest version this code reads: version 1 had no samples.overrun
 * (each sample stood for one timer period), versions 1 and 2 no modules
 * table (they read as a profile without modules). */
#define SCHEMA_VERSION_MIN 1
/* PRAGMA application_id: "KSCP", so `file` and tools can tell a kscope
 * profile from any other SQLite database. */
#define APPLICATION_ID 0x4b534350
#define DB_MODE 0640

/* The metadata key the store itself writes (first, as meta row 0); a
 * profile's own metadata may not use it. */
#define VERSION_KEY "schema_version"

/* ------------------------------------------------------------------ */
/* Schema                                                              */
/* ------------------------------------------------------------------ */

/* The tables, created empty in the first transaction.  Ids are the
 * indexes of the profile's arrays (from 0, dense, in order).  Unsigned
 * 64-bit values are stored as SQLite's signed 64-bit integers with the
 * same bits. */
static const char schema_tables[] =
	"CREATE TABLE meta(\n"
	"  id    INTEGER PRIMARY KEY,\n"
	"  key   TEXT NOT NULL,\n"
	"  value TEXT NOT NULL);\n"
	"CREATE TABLE sampling(\n"
	"  cputime_freq    INTEGER NOT NULL,\n"
	"  realtime_freq   INTEGER NOT NULL,\n"
	"  dropped_samples INTEGER NOT NULL);\n"
	"CREATE TABLE strings(\n"
	"  id   INTEGER PRIMARY KEY,\n"
	"  text TEXT NOT NULL);\n"
	"CREATE TABLE processes(\n"
	"  id         INTEGER PRIMARY KEY,\n"
	"  pid        INTEGER NOT NULL,\n"
	"  ppid       INTEGER NOT NULL,\n"
	"  rank       INTEGER NOT NULL,\n"
	"  command    INTEGER NOT NULL REFERENCES strings(id),\n"
	"  start_ns   INTEGER NOT NULL,\n"
	"  end_ns     INTEGER NOT NULL,\n"
	"  end_reason INTEGER NOT NULL,\n"
	"  end_status INTEGER NOT NULL);\n"
	"CREATE TABLE threads(\n"
	"  id         INTEGER PRIMARY KEY,\n"
	"  process_id INTEGER NOT NULL REFERENCES processes(id),\n"
	"  tid        INTEGER NOT NULL,\n"
	"  name       INTEGER NOT NULL REFERENCES strings(id),\n"
	"  start_ns   INTEGER NOT NULL,\n"
	"  end_ns     INTEGER NOT NULL,\n"
	"  cpu_ns     INTEGER NOT NULL,\n"
	"  samples    INTEGER NOT NULL);\n"
	"CREATE TABLE frames(\n"
	"  id       INTEGER PRIMARY KEY,\n"
	"  function INTEGER NOT NULL REFERENCES strings(id),\n"
	"  file     INTEGER REFERENCES strings(id),\n"
	"  line     INTEGER NOT NULL,\n"
	"  module   INTEGER NOT NULL REFERENCES strings(id),\n"
	"  address  INTEGER NOT NULL,\n"
	"  inlined  INTEGER NOT NULL);\n"
	"CREATE TABLE stacks(\n"
	"  id        INTEGER PRIMARY KEY,\n"
	"  parent_id INTEGER REFERENCES stacks(id),\n"
	"  frame_id  INTEGER NOT NULL REFERENCES frames(id));\n"
	"CREATE TABLE modules(\n"
	"  id         INTEGER PRIMARY KEY,\n"
	"  process_id INTEGER NOT NULL REFERENCES processes(id),\n"
	"  path       INTEGER NOT NULL REFERENCES strings(id),\n"
	"  base       INTEGER NOT NULL,\n"
	"  low        INTEGER NOT NULL,\n"
	"  high       INTEGER NOT NULL,\n"
	"  build_id   INTEGER REFERENCES strings(id));\n"
	"CREATE TABLE counter_names(\n"
	"  id   INTEGER PRIMARY KEY,\n"
	"  name INTEGER NOT NULL REFERENCES strings(id));\n"
	"CREATE TABLE samples(\n"
	"  id        INTEGER PRIMARY KEY,\n"
	"  ts_ns     INTEGER NOT NULL,\n"
	"  thread_id INTEGER NOT NULL REFERENCES threads(id),\n"
	"  stack_id  INTEGER REFERENCES stacks(id),\n"
	"  clock     INTEGER NOT NULL,\n"
	"  cpu_ns    INTEGER NOT NULL,\n"
	"  minflt    INTEGER NOT NULL,\n"
	"  majflt    INTEGER NOT NULL,\n"
	"  overrun   INTEGER NOT NULL);\n"
	"CREATE TABLE sample_counters(\n"
	"  sample_id  INTEGER NOT NULL REFERENCES samples(id),\n"
	"  counter_id INTEGER NOT NULL REFERENCES counter_names(id),\n"
	"  value      INTEGER NOT NULL,\n"
	"  PRIMARY KEY (sample_id, counter_id)) WITHOUT ROWID;\n"
	"CREATE TABLE regions(\n"
	"  id        INTEGER PRIMARY KEY,\n"
	"  thread_id INTEGER NOT NULL REFERENCES threads(id),\n"
	"  name      INTEGER NOT NULL REFERENCES strings(id),\n"
	"  kind      INTEGER NOT NULL,\n"
	"  depth     INTEGER NOT NULL,\n"
	"  start_ns  INTEGER NOT NULL,\n"
	"  end_ns    INTEGER NOT NULL,\n"
	"  bytes     INTEGER NOT NULL,\n"
	"  peer      INTEGER NOT NULL,\n"
	"  range_id  INTEGER NOT NULL);\n"
	"CREATE TABLE counters(\n"
	"  id         INTEGER PRIMARY KEY,\n"
	"  process_id INTEGER NOT NULL REFERENCES processes(id),\n"
	"  kind       INTEGER NOT NULL,\n"
	"  ts_ns      INTEGER NOT NULL,\n"
	"  value      REAL);\n";

/* Built after the data is in (one sort each instead of a b-tree insert
 * per row): the queries reports and users make most. */
static const char schema_indexes[] =
	"CREATE INDEX samples_by_thread ON samples(thread_id, ts_ns);\n"
	"CREATE INDEX samples_by_stack ON samples(stack_id);\n"
	"CREATE INDEX stacks_by_parent ON stacks(parent_id);\n"
	"CREATE INDEX threads_by_process ON threads(process_id);\n"
	"CREATE INDEX regions_by_thread ON regions(thread_id, start_ns);\n"
	"CREATE INDEX regions_by_name ON regions(name);\n"
	"CREATE INDEX counters_by_process ON counters(process_id, kind, ts_ns);\n";

/* Views for people querying the database by hand; kscope itself reads
 * only the tables.  `flat` is the flat profile of all samples: self
 * counts the samples whose innermost frame is in the function, total the
 * samples with the function anywhere on their call path (once, however
 * often recursion repeats it), as `kscope report` does. */
static const char schema_views[] =
	"CREATE VIEW frames_named AS\n"
	"  SELECT f.id AS id, fn.text AS function, fl.text AS file, f.line AS line,\n"
	"         md.text AS module, f.address AS address, f.inlined AS inlined\n"
	"  FROM frames f JOIN strings fn ON fn.id = f.function\n"
	"  LEFT JOIN strings fl ON fl.id = f.file\n"
	"  JOIN strings md ON md.id = f.module;\n"
	"CREATE VIEW regions_named AS\n"
	"  SELECT r.id AS id, r.thread_id AS thread_id, s.text AS name,\n"
	"         CASE r.kind WHEN 0 THEN 'region' WHEN 1 THEN 'range'\n"
	"           WHEN 2 THEN 'mpi' WHEN 3 THEN 'mark' WHEN 4 THEN 'pause'\n"
	"           ELSE CAST(r.kind AS TEXT) END AS kind,\n"
	"         r.depth AS depth, r.start_ns AS start_ns, r.end_ns AS end_ns,\n"
	"         r.end_ns - r.start_ns AS duration_ns, r.bytes AS bytes,\n"
	"         r.peer AS peer, r.range_id AS range_id\n"
	"  FROM regions r JOIN strings s ON s.id = r.name;\n"
	"CREATE VIEW flat AS\n"
	"  WITH RECURSIVE\n"
	"    path(stack_id, node_id) AS (\n"
	"      SELECT id, id FROM stacks\n"
	"      UNION ALL\n"
	"      SELECT path.stack_id, s.parent_id FROM path\n"
	"        JOIN stacks s ON s.id = path.node_id\n"
	"        WHERE s.parent_id IS NOT NULL),\n"
	"    per_stack(stack_id, n) AS (\n"
	"      SELECT stack_id, SUM(1 + overrun) FROM samples\n"
	"        WHERE stack_id IS NOT NULL GROUP BY stack_id),\n"
	"    on_path(stack_id, function, module) AS (\n"
	"      SELECT DISTINCT path.stack_id, f.function, f.module FROM path\n"
	"        JOIN stacks s ON s.id = path.node_id\n"
	"        JOIN frames f ON f.id = s.frame_id),\n"
	"    totals(function, module, total) AS (\n"
	"      SELECT o.function, o.module, SUM(ps.n) FROM on_path o\n"
	"        JOIN per_stack ps ON ps.stack_id = o.stack_id\n"
	"        GROUP BY o.function, o.module),\n"
	"    selfs(function, module, self) AS (\n"
	"      SELECT f.function, f.module, SUM(ps.n) FROM per_stack ps\n"
	"        JOIN stacks s ON s.id = ps.stack_id\n"
	"        JOIN frames f ON f.id = s.frame_id\n"
	"        GROUP BY f.function, f.module)\n"
	"  SELECT fn.text AS function, md.text AS module,\n"
	"         COALESCE(selfs.self, 0) AS self, totals.total AS total\n"
	"  FROM totals LEFT JOIN selfs USING (function, module)\n"
	"  JOIN strings fn ON fn.id = totals.function\n"
	"  JOIN strings md ON md.id = totals.module\n"
	"  ORDER BY self DESC, total DESC, function;\n";

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */

/* An errno-style code for SQLite's last error on db. */
static int sqlite_errno(sqlite3 *db)
{
	int sys = db ? sqlite3_system_errno(db) : 0;

	switch (db ? sqlite3_errcode(db) & 0xff : SQLITE_NOMEM) {
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_IOERR:
	case SQLITE_CANTOPEN:
		return sys > 0 ? -sys : -EIO;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_SCHEMA:
	case SQLITE_ERROR:
	case SQLITE_MISMATCH:
	case SQLITE_CONSTRAINT:
	case SQLITE_RANGE:
		return -EBADMSG;
	default:
		return -EIO;
	}
}

static int db_fail(sqlite3 *db, struct ks_err *err, const char *path,
		   const char *what)
{
	return ks_err_set(err, sqlite_errno(db), "%s: %s: %s", path, what,
			  db ? sqlite3_errmsg(db) : "out of memory");
}

/* ------------------------------------------------------------------ */
/* Profile consistency                                                 */
/* ------------------------------------------------------------------ */

int ks_store_check_profile(const struct ks_profile *p, struct ks_err *err)
{
	size_t ns = p->n_strings;

#define BAD(...) return ks_err_set(err, -EINVAL, "inconsistent profile: " __VA_ARGS__)
	if (ns == 0 || !p->strings[0] || p->strings[0][0] != '\0')
		BAD("string 0 is not the empty string");
	for (size_t i = 0; i < ns; i++)
		if (!p->strings[i])
			BAD("string %zu is missing", i);
	for (size_t i = 0; i < p->n_frames; i++) {
		const struct ks_pframe *f = &p->frames[i];

		if (f->function >= ns || f->module >= ns ||
		    (f->file != KS_NONE && f->file >= ns))
			BAD("frame %zu names a string that does not exist", i);
	}
	for (size_t i = 0; i < p->n_nodes; i++) {
		const struct ks_pnode *n = &p->nodes[i];

		if (n->frame >= p->n_frames)
			BAD("call-path node %zu has frame %" PRIu32 " of %zu", i,
			    n->frame, p->n_frames);
		if (n->parent != KS_NONE && n->parent >= i)
			BAD("call-path node %zu has parent %" PRIu32
			    ", which does not come before it", i, n->parent);
	}
	for (size_t i = 0; i < p->n_processes; i++)
		if (p->processes[i].command >= ns)
			BAD("process %zu names a string that does not exist", i);
	for (size_t i = 0; i < p->n_threads; i++)
		if (p->threads[i].process >= p->n_processes || p->threads[i].name >= ns)
			BAD("thread %zu has process %" PRIu32 " of %zu or a bad name",
			    i, p->threads[i].process, p->n_processes);
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (s->thread >= p->n_threads)
			BAD("sample %zu has thread %" PRIu32 " of %zu", i, s->thread,
			    p->n_threads);
		if (s->node != KS_NONE && s->node >= p->n_nodes)
			BAD("sample %zu has call-path node %" PRIu32 " of %zu", i,
			    s->node, p->n_nodes);
		if (s->counters != KS_NONE && s->counters > p->n_counter_values)
			BAD("sample %zu has counter values at %" PRIu32
			    " beyond the %zu stored", i, s->counters,
			    p->n_counter_values);
	}
	for (size_t i = 0; i < p->n_slices; i++)
		if (p->slices[i].thread >= p->n_threads || p->slices[i].name >= ns)
			BAD("slice %zu has thread %" PRIu32 " of %zu or a bad name", i,
			    p->slices[i].thread, p->n_threads);
	for (size_t i = 0; i < p->n_counters; i++)
		if (p->counters[i].process >= p->n_processes)
			BAD("counter value %zu has process %" PRIu32 " of %zu", i,
			    p->counters[i].process, p->n_processes);
	for (size_t i = 0; i < p->n_modules; i++) {
		const struct ks_pmodule *m = &p->modules[i];

		if (m->process >= p->n_processes || m->path >= ns ||
		    (m->build_id != KS_NONE && m->build_id >= ns))
			BAD("module %zu has process %" PRIu32 " of %zu or a bad string",
			    i, m->process, p->n_processes);
	}
	for (size_t i = 0; i < p->n_counter_names; i++)
		if (p->counter_names[i] >= ns)
			BAD("counter name %zu names a string that does not exist", i);
	for (size_t i = 0; i < p->n_meta; i++) {
		if (p->meta[i].key >= ns || p->meta[i].value >= ns)
			BAD("metadata pair %zu names a string that does not exist", i);
		if (strcmp(p->strings[p->meta[i].key], VERSION_KEY) == 0)
			BAD("metadata key '" VERSION_KEY "' is reserved for the store");
	}
#undef BAD
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

struct writer {
	sqlite3 *db;
	const char *path;      /* the final name, for messages */
	struct ks_err *err;
};

static int w_exec(struct writer *w, const char *sql, const char *what)
{
	if (sqlite3_exec(w->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		return db_fail(w->db, w->err, w->path, what);
	return 0;
}

static int w_prepare(struct writer *w, const char *sql, sqlite3_stmt **st)
{
	if (sqlite3_prepare_v2(w->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(w->db, w->err, w->path, "preparing an insert");
	return 0;
}

/* Runs a bound insert and makes it ready for the next row. */
static int w_step(struct writer *w, sqlite3_stmt *st, const char *table)
{
	char what[64];

	if (sqlite3_step(st) == SQLITE_DONE && sqlite3_reset(st) == SQLITE_OK)
		return 0;
	snprintf(what, sizeof(what), "writing table %s", table);
	return db_fail(w->db, w->err, w->path, what);
}

/* uint64_t values keep their bits in SQLite's int64 (docs/profile-db.md). */
static inline sqlite3_int64 u64(uint64_t v)
{
	return (sqlite3_int64)v;
}

static int bind_ref(sqlite3_stmt *st, int col, uint32_t id)
{
	return id == KS_NONE ? sqlite3_bind_null(st, col)
			     : sqlite3_bind_int64(st, col, id);
}

static int write_meta_row(struct writer *w, sqlite3_stmt *st, int64_t id,
			  const char *key, const char *value)
{
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, value, -1, SQLITE_STATIC);
	return w_step(w, st, "meta");
}

/* meta, strings, processes, threads, frames, stacks and counter_names:
 * everything the samples refer to. */
static int write_model(struct writer *w, const struct ks_profile *p)
{
	sqlite3_stmt *st = NULL;
	char version[16];
	int rc;

	if ((rc = w_prepare(w, "INSERT INTO meta VALUES (?1, ?2, ?3)", &st)))
		goto out;
	snprintf(version, sizeof(version), "%d", SCHEMA_VERSION);
	if ((rc = write_meta_row(w, st, 0, VERSION_KEY, version)))
		goto out;
	for (size_t i = 0; i < p->n_meta; i++)
		if ((rc = write_meta_row(w, st, (int64_t)i + 1,
					 p->strings[p->meta[i].key],
					 p->strings[p->meta[i].value])))
			goto out;
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO sampling VALUES (?1, ?2, ?3)", &st)))
		goto out;
	sqlite3_bind_int64(st, 1, p->cputime_freq);
	sqlite3_bind_int64(st, 2, p->realtime_freq);
	sqlite3_bind_int64(st, 3, u64(p->dropped_samples));
	if ((rc = w_step(w, st, "sampling")))
		goto out;
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO strings VALUES (?1, ?2)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_strings; i++) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_text(st, 2, p->strings[i], -1, SQLITE_STATIC);
		if ((rc = w_step(w, st, "strings")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO processes VALUES "
			    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_processes; i++) {
		const struct ks_pprocess *x = &p->processes[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, x->pid);
		sqlite3_bind_int64(st, 3, x->ppid);
		sqlite3_bind_int64(st, 4, x->rank);
		sqlite3_bind_int64(st, 5, x->command);
		sqlite3_bind_int64(st, 6, u64(x->start));
		sqlite3_bind_int64(st, 7, u64(x->end));
		sqlite3_bind_int64(st, 8, x->end_reason);
		sqlite3_bind_int64(st, 9, x->end_status);
		if ((rc = w_step(w, st, "processes")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO threads VALUES "
			    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_threads; i++) {
		const struct ks_pthread *t = &p->threads[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, t->process);
		sqlite3_bind_int64(st, 3, t->tid);
		sqlite3_bind_int64(st, 4, t->name);
		sqlite3_bind_int64(st, 5, u64(t->start));
		sqlite3_bind_int64(st, 6, u64(t->end));
		sqlite3_bind_int64(st, 7, u64(t->cpu_ns));
		sqlite3_bind_int64(st, 8, u64(t->samples));
		if ((rc = w_step(w, st, "threads")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO frames VALUES "
			    "(?1, ?2, ?3, ?4, ?5, ?6, ?7)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_frames; i++) {
		const struct ks_pframe *f = &p->frames[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, f->function);
		bind_ref(st, 3, f->file);
		sqlite3_bind_int64(st, 4, f->line);
		sqlite3_bind_int64(st, 5, f->module);
		sqlite3_bind_int64(st, 6, u64(f->address));
		sqlite3_bind_int64(st, 7, f->inlined ? 1 : 0);
		if ((rc = w_step(w, st, "frames")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO stacks VALUES (?1, ?2, ?3)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_nodes; i++) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		bind_ref(st, 2, p->nodes[i].parent);
		sqlite3_bind_int64(st, 3, p->nodes[i].frame);
		if ((rc = w_step(w, st, "stacks")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO modules VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
			    &st)))
		goto out;
	for (size_t i = 0; i < p->n_modules; i++) {
		const struct ks_pmodule *m = &p->modules[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, m->process);
		sqlite3_bind_int64(st, 3, m->path);
		sqlite3_bind_int64(st, 4, u64(m->base));
		sqlite3_bind_int64(st, 5, u64(m->low));
		sqlite3_bind_int64(st, 6, u64(m->high));
		bind_ref(st, 7, m->build_id);
		if ((rc = w_step(w, st, "modules")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO counter_names VALUES (?1, ?2)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_counter_names; i++) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, p->counter_names[i]);
		if ((rc = w_step(w, st, "counter_names")))
			goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* samples and sample_counters. */
static int write_samples(struct writer *w, const struct ks_profile *p)
{
	sqlite3_stmt *st = NULL, *sc = NULL;
	int rc;

	if ((rc = w_prepare(w, "INSERT INTO samples VALUES "
			    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", &st)) ||
	    (rc = w_prepare(w, "INSERT INTO sample_counters VALUES (?1, ?2, ?3)",
			    &sc)))
		goto out;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, u64(s->ts));
		sqlite3_bind_int64(st, 3, s->thread);
		bind_ref(st, 4, s->node);
		sqlite3_bind_int64(st, 5, s->clock);
		sqlite3_bind_int64(st, 6, u64(s->cpu_ns));
		sqlite3_bind_int64(st, 7, s->minflt);
		sqlite3_bind_int64(st, 8, s->majflt);
		sqlite3_bind_int64(st, 9, s->overrun);
		if ((rc = w_step(w, st, "samples")))
			goto out;
		if (s->counters == KS_NONE)
			continue;
		/* One value per counter name; a block cut short (the last
		 * sample of a damaged raw file) keeps the values it has. */
		for (size_t j = 0; j < p->n_counter_names &&
			s->counters + j < p->n_counter_values; j++) {
			sqlite3_bind_int64(sc, 1, (sqlite3_int64)i);
			sqlite3_bind_int64(sc, 2, (sqlite3_int64)j);
			sqlite3_bind_int64(sc, 3, u64(p->counter_values[s->counters + j]));
			if ((rc = w_step(w, sc, "sample_counters")))
				goto out;
		}
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_finalize(sc);
	return rc;
}

/* regions (the profile's slices) and counters. */
static int write_timeline(struct writer *w, const struct ks_profile *p)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = w_prepare(w, "INSERT INTO regions VALUES "
			    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", &st)))
		goto out;
	for (size_t i = 0; i < p->n_slices; i++) {
		const struct ks_pslice *s = &p->slices[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, s->thread);
		sqlite3_bind_int64(st, 3, s->name);
		sqlite3_bind_int64(st, 4, s->kind);
		sqlite3_bind_int64(st, 5, s->depth);
		sqlite3_bind_int64(st, 6, u64(s->start));
		sqlite3_bind_int64(st, 7, u64(s->end));
		sqlite3_bind_int64(st, 8, u64(s->bytes));
		sqlite3_bind_int64(st, 9, s->peer);
		sqlite3_bind_int64(st, 10, u64(s->id));
		if ((rc = w_step(w, st, "regions")))
			goto out;
	}
	sqlite3_finalize(st);

	if ((rc = w_prepare(w, "INSERT INTO counters VALUES (?1, ?2, ?3, ?4, ?5)",
			    &st)))
		goto out;
	for (size_t i = 0; i < p->n_counters; i++) {
		const struct ks_pcounter *c = &p->counters[i];

		sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
		sqlite3_bind_int64(st, 2, c->process);
		sqlite3_bind_int64(st, 3, c->kind);
		sqlite3_bind_int64(st, 4, u64(c->ts));
		/* SQLite would store NaN as NULL anyway; say so explicitly. */
		if (isnan(c->value))
			sqlite3_bind_null(st, 5);
		else
			sqlite3_bind_double(st, 5, c->value);
		if ((rc = w_step(w, st, "counters")))
			goto out;
	}
	rc = 0;
out:
	sqlite3_finalize(st);
	return rc;
}

/* The temporary name next to path: ".NAME.<pid>.part".  The pid keeps a
 * file left by a killed writer from blocking the next one. */
static int temp_name(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	int dirlen = slash ? (int)(slash - path) + 1 : 0;
	int n;

	if (!base[0])
		return -EISDIR;
	n = snprintf(buf, size, "%.*s.%s.%ld.part", dirlen, path, base, (long)getpid());
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Flushes the directory holding path, so that a rename in it is durable. */
static void sync_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd); /* best effort: some file systems refuse it */
		close(fd);
	}
}

int ks_store_file_create(struct ks_store_file *f, const char *path, uint32_t application_id,
			 int user_version, struct ks_err *err)
{
	char pragmas[256];
	struct stat st;
	int rc;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	if (snprintf(f->path, sizeof(f->path), "%s", path) >= (int)sizeof(f->path))
		return ks_err_set(err, -ENAMETOOLONG, "%s: path too long", path);
	if (lstat(path, &st) == 0)
		return ks_err_set(err, -EEXIST, "%s exists; a kscope database is never "
				  "overwritten", path);
	if (errno != ENOENT)
		return ks_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if ((rc = temp_name(path, f->tmp, sizeof(f->tmp))))
		return ks_err_set(err, rc, "%s: %s", path, strerror(-rc));

	/* Created here rather than by SQLite so that it is exclusive, never
	 * follows a link, and has its mode whatever the umask. */
	f->fd = open(f->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, DB_MODE);
	if (f->fd < 0) {
		rc = ks_err_set(err, -errno, "cannot create %s: %s", f->tmp, strerror(errno));
		f->tmp[0] = '\0';
		return rc;
	}
	if (fchmod(f->fd, DB_MODE) != 0) {
		rc = ks_err_set(err, -errno, "cannot set the mode of %s: %s", f->tmp,
				strerror(errno));
		goto fail;
	}
	if (sqlite3_open_v2(f->tmp, &f->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW,
			    NULL) != SQLITE_OK) {
		rc = db_fail(f->db, err, path, "cannot open the new database");
		goto fail;
	}
	/* No journal: the file has no final name until it is complete, so
	 * there is nothing to roll back, and no -journal file appears next to
	 * it.  Durability comes from the fsync at the end. */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=OFF;"
		 "PRAGMA synchronous=OFF;"
		 "PRAGMA locking_mode=EXCLUSIVE;"
		 "PRAGMA temp_store=MEMORY;"
		 "PRAGMA cache_size=-65536;"
		 "PRAGMA application_id=%ld;"
		 "PRAGMA user_version=%d;", (long)(int32_t)application_id, user_version);
	if (sqlite3_exec(f->db, pragmas, NULL, NULL, NULL) != SQLITE_OK) {
		rc = db_fail(f->db, err, path, "setting up the database");
		goto fail;
	}
	return 0;
fail:
	ks_store_file_abort(f);
	return rc;
}

int ks_store_file_commit(struct ks_store_file *f, struct ks_err *err)
{
	int rc;

	if (sqlite3_close(f->db) != SQLITE_OK) {
		rc = db_fail(f->db, err, f->path, "closing the database");
		goto fail;
	}
	f->db = NULL;
	if (fsync(f->fd) != 0) {
		rc = ks_err_set(err, -errno, "%s: writing to disk failed: %s", f->path,
				strerror(errno));
		goto fail;
	}
	rc = ks_rename_noreplace(AT_FDCWD, f->tmp, AT_FDCWD, f->path);
	if (rc) {
		rc = ks_err_set(err, rc, rc == -EEXIST ? "%s appeared while it was "
				"written; a kscope database is never overwritten"
				: "cannot give %s its name: %s", f->path, strerror(-rc));
		goto fail;
	}
	sync_parent(f->path);
	f->tmp[0] = '\0';
	ks_store_file_abort(f);
	return 0;
fail:
	ks_store_file_abort(f);
	return rc;
}

void ks_store_file_abort(struct ks_store_file *f)
{
	if (f->db)
		sqlite3_close(f->db);
	f->db = NULL;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (f->tmp[0])
		unlink(f->tmp);
	f->tmp[0] = '\0';
}

int ks_store_write(const struct ks_profile *p, const char *path, struct ks_err *err)
{
	struct ks_store_file f;
	struct writer w = { .path = path, .err = err };
	int rc;

	if ((rc = ks_store_check_profile(p, err)))
		return rc;
	if ((rc = ks_store_file_create(&f, path, APPLICATION_ID, SCHEMA_VERSION, err)))
		return rc;
	w.db = f.db;
	if ((rc = w_exec(&w, "BEGIN", "starting a transaction")) ||
	    (rc = w_exec(&w, schema_tables, "creating the tables")) ||
	    (rc = write_model(&w, p)) ||
	    (rc = w_exec(&w, "COMMIT", "committing the call paths")))
		goto out;
	if ((rc = w_exec(&w, "BEGIN", "starting a transaction")) ||
	    (rc = write_samples(&w, p)) ||
	    (rc = w_exec(&w, "COMMIT", "committing the samples")))
		goto out;
	if ((rc = w_exec(&w, "BEGIN", "starting a transaction")) ||
	    (rc = write_timeline(&w, p)) ||
	    (rc = w_exec(&w, "COMMIT", "committing the regions and counters")))
		goto out;
	if ((rc = w_exec(&w, "BEGIN", "starting a transaction")) ||
	    (rc = w_exec(&w, schema_indexes, "creating the indexes")) ||
	    (rc = w_exec(&w, schema_views, "creating the views")) ||
	    (rc = w_exec(&w, "COMMIT", "committing the indexes")))
		goto out;
	return ks_store_file_commit(&f, err);
out:
	ks_store_file_abort(&f);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

struct reader {
	sqlite3 *db;
	sqlite3_stmt *st;      /* the query being read */
	const char *path;
	const char *table;     /* the table being read, for messages */
	struct ks_err *err;
	struct ks_profile *p;
	int version;           /* the file's schema version */
};

static int r_prepare(struct reader *r, const char *table, const char *sql)
{
	sqlite3_finalize(r->st);
	r->st = NULL;
	r->table = table;
	if (sqlite3_prepare_v2(r->db, sql, -1, &r->st, NULL) != SQLITE_OK) {
		char what[96];

		snprintf(what, sizeof(what), "reading table %s", table);
		return db_fail(r->db, r->err, r->path, what);
	}
	return 0;
}

/* The next row: 1, or 0 at the end, or a negative error. */
static int r_step(struct reader *r)
{
	int s = sqlite3_step(r->st);
	char what[96];

	if (s == SQLITE_ROW)
		return 1;
	if (s == SQLITE_DONE)
		return 0;
	snprintf(what, sizeof(what), "reading table %s", r->table);
	return db_fail(r->db, r->err, r->path, what);
}

static int r_damaged(struct reader *r, int col, const char *why)
{
	char val[64];

	switch (sqlite3_column_type(r->st, col)) {
	case SQLITE_NULL:
		snprintf(val, sizeof(val), "NULL");
		break;
	case SQLITE_INTEGER:
		snprintf(val, sizeof(val), "%lld", sqlite3_column_int64(r->st, col));
		break;
	default:
		snprintf(val, sizeof(val), "a %s value",
			 sqlite3_column_type(r->st, col) == SQLITE_FLOAT ? "real" :
			 sqlite3_column_type(r->st, col) == SQLITE_TEXT ? "text" : "blob");
	}
	return ks_err_set(r->err, -EBADMSG, "%s is damaged: table %s, row %lld, "
			  "column %s is %s; %s", r->path, r->table,
			  sqlite3_column_int64(r->st, 0),
			  sqlite3_column_name(r->st, col), val, why);
}

/* Column col as an integer in [lo, hi], else a "damaged" error. */
static int r_int(struct reader *r, int col, int64_t lo, int64_t hi, int64_t *v)
{
	char why[96];

	if (sqlite3_column_type(r->st, col) == SQLITE_INTEGER) {
		*v = sqlite3_column_int64(r->st, col);
		if (*v >= lo && *v <= hi)
			return 0;
	}
	snprintf(why, sizeof(why), "expected an integer from %" PRId64 " to %"
		 PRId64, lo, hi);
	return r_damaged(r, col, why);
}

/* An unsigned 64-bit column (any integer: its bits are the value). */
static int r_u64(struct reader *r, int col, uint64_t *v)
{
	if (sqlite3_column_type(r->st, col) != SQLITE_INTEGER)
		return r_damaged(r, col, "expected an integer");
	*v = (uint64_t)sqlite3_column_int64(r->st, col);
	return 0;
}

static int r_u32(struct reader *r, int col, uint32_t *v)
{
	int64_t x;
	int rc = r_int(r, col, 0, UINT32_MAX, &x);

	*v = (uint32_t)x;
	return rc;
}

static int r_i32(struct reader *r, int col, int32_t *v)
{
	int64_t x;
	int rc = r_int(r, col, INT32_MIN, INT32_MAX, &x);

	*v = (int32_t)x;
	return rc;
}

/* An id referring to a table of n rows; NULL allowed (as KS_NONE) when
 * nullable. */
static int r_ref(struct reader *r, int col, size_t n, bool nullable, uint32_t *v)
{
	int64_t x;
	int rc;

	if (nullable && sqlite3_column_type(r->st, col) == SQLITE_NULL) {
		*v = KS_NONE;
		return 0;
	}
	if (n == 0)
		return r_damaged(r, col, "it refers to an empty table");
	rc = r_int(r, col, 0, (int64_t)n - 1, &x);
	*v = (uint32_t)x;
	return rc;
}

/* Referenced tables must have ids 0, 1, 2, ... in order (the writer's
 * guarantee), so an id is an index. */
static int r_dense(struct reader *r, size_t expect)
{
	if (sqlite3_column_type(r->st, 0) == SQLITE_INTEGER &&
	    sqlite3_column_int64(r->st, 0) == (sqlite3_int64)expect)
		return 0;
	return ks_err_set(r->err, -EBADMSG, "%s is damaged: table %s has id %lld "
			  "where %zu was expected (ids run from 0 without gaps)",
			  r->path, r->table, sqlite3_column_int64(r->st, 0), expect);
}

#define NOMEM() ks_err_set(r->err, -ENOMEM, "out of memory reading %s", r->path)

/* Checks that this is a profile database of a version this code reads. */
static int read_version(struct reader *r)
{
	const char *text;
	int64_t v;
	int rc;

	if (sqlite3_prepare_v2(r->db, "SELECT value FROM meta WHERE "
			       "key = '" VERSION_KEY "' ORDER BY id LIMIT 1", -1, &r->st,
			       NULL) != SQLITE_OK) {
		if ((sqlite3_errcode(r->db) & 0xff) == SQLITE_ERROR)
			return ks_err_set(r->err, -EBADMSG, "%s is not a kscope "
					  "profile database (it has no meta table)",
					  r->path);
		return db_fail(r->db, r->err, r->path, "cannot read");
	}
	r->table = "meta";
	rc = r_step(r);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return ks_err_set(r->err, -EBADMSG, "%s is not a kscope profile "
				  "database (its meta table has no schema_version)",
				  r->path);
	text = (const char *)sqlite3_column_text(r->st, 0);
	v = text ? strtoll(text, NULL, 10) : -1;
	if (v < SCHEMA_VERSION_MIN || v > SCHEMA_VERSION)
		return ks_err_set(r->err, -EPROTONOSUPPORT, "%s has schema version "
				  "'%s'; this kscope reads versions %d to %d", r->path,
				  text ? text : "NULL", SCHEMA_VERSION_MIN, SCHEMA_VERSION);
	r->version = (int)v;
	return 0;
}

static int read_strings(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "strings", "SELECT id, text FROM strings ORDER BY id")))
		return rc;
	for (size_t i = 0; (rc = r_step(r)) == 1; i++) {
		const char *s = (const char *)sqlite3_column_text(r->st, 1);
		uint32_t id;

		if ((rc = r_dense(r, i)))
			return rc;
		if (sqlite3_column_type(r->st, 1) != SQLITE_TEXT)
			return r_damaged(r, 1, "expected text");
		id = ks_profile_intern(p, s);
		if (id == KS_NONE)
			return NOMEM();
		if (id != i)
			return ks_err_set(r->err, -EBADMSG, "%s is damaged: table "
					  "strings holds the same text at ids %" PRIu32
					  " and %zu%s", r->path, id, i,
					  i == 0 ? " (id 0 must be the empty string)" : "");
	}
	if (rc < 0)
		return rc;
	if (p->n_strings == 0 || p->strings[0][0] != '\0')
		return ks_err_set(r->err, -EBADMSG, "%s is damaged: table strings "
				  "lacks the empty string at id 0", r->path);
	return 0;
}

static int read_frames(struct reader *r)
{
	struct ks_profile *p = r->p;
	size_t ns = p->n_strings;
	int rc;

	if ((rc = r_prepare(r, "frames", "SELECT id, function, file, line, module, "
			    "address, inlined FROM frames ORDER BY id")))
		return rc;
	for (size_t i = 0; (rc = r_step(r)) == 1; i++) {
		struct ks_pframe f;
		int64_t inl = 0;
		uint32_t id;

		memset(&f, 0, sizeof(f));
		if ((rc = r_dense(r, i)) ||
		    (rc = r_ref(r, 1, ns, false, &f.function)) ||
		    (rc = r_ref(r, 2, ns, true, &f.file)) ||
		    (rc = r_u32(r, 3, &f.line)) ||
		    (rc = r_ref(r, 4, ns, false, &f.module)) ||
		    (rc = r_u64(r, 5, &f.address)) ||
		    (rc = r_int(r, 6, 0, 1, &inl)))
			return rc;
		f.inlined = inl != 0;
		id = ks_profile_frame(p, &f);
		if (id == KS_NONE)
			return NOMEM();
		if (id != i)
			return ks_err_set(r->err, -EBADMSG, "%s is damaged: table frames "
					  "holds the same frame at ids %" PRIu32 " and %zu",
					  r->path, id, i);
	}
	return rc < 0 ? rc : 0;
}

static int read_stacks(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "stacks", "SELECT id, parent_id, frame_id FROM stacks "
			    "ORDER BY id")))
		return rc;
	for (size_t i = 0; (rc = r_step(r)) == 1; i++) {
		uint32_t parent, frame, id;

		/* A parent always comes before its children (profile.h's node
		 * order, which the reports rely on): so the parent's id must
		 * be below this row's. */
		if ((rc = r_dense(r, i)) ||
		    (rc = r_ref(r, 1, i, true, &parent)) ||
		    (rc = r_ref(r, 2, p->n_frames, false, &frame)))
			return rc;
		id = ks_profile_node(p, parent, frame);
		if (id == KS_NONE)
			return NOMEM();
		if (id != i)
			return ks_err_set(r->err, -EBADMSG, "%s is damaged: table stacks "
					  "holds the same call path at ids %" PRIu32
					  " and %zu", r->path, id, i);
	}
	return rc < 0 ? rc : 0;
}

static int read_processes(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "processes", "SELECT id, pid, ppid, rank, command, "
			    "start_ns, end_ns, end_reason, end_status FROM processes "
			    "ORDER BY id")))
		return rc;
	for (size_t i = 0; (rc = r_step(r)) == 1; i++) {
		struct ks_pprocess *x = ks_profile_push(p, processes);

		if (!x)
			return NOMEM();
		if ((rc = r_dense(r, i)) ||
		    (rc = r_i32(r, 1, &x->pid)) ||
		    (rc = r_i32(r, 2, &x->ppid)) ||
		    (rc = r_i32(r, 3, &x->rank)) ||
		    (rc = r_ref(r, 4, p->n_strings, false, &x->command)) ||
		    (rc = r_u64(r, 5, &x->start)) ||
		    (rc = r_u64(r, 6, &x->end)) ||
		    (rc = r_u32(r, 7, &x->end_reason)) ||
		    (rc = r_i32(r, 8, &x->end_status)))
			return rc;
	}
	return rc < 0 ? rc : 0;
}

static int read_threads(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "threads", "SELECT id, process_id, tid, name, "
			    "start_ns, end_ns, cpu_ns, samples FROM threads ORDER BY id")))
		return rc;
	for (size_t i = 0; (rc = r_step(r)) == 1; i++) {
		struct ks_pthread *t = ks_profile_push(p, threads);

		if (!t)
			return NOMEM();
		if ((rc = r_dense(r, i)) ||
		    (rc = r_ref(r, 1, p->n_processes, false, &t->process)) ||
		    (rc = r_i32(r, 2, &t->tid)) ||
		    (rc = r_ref(r, 3, p->n_strings, false, &t->name)) ||
		    (rc = r_u64(r, 4, &t->start)) ||
		    (rc = r_u64(r, 5, &t->end)) ||
		    (rc = r_u64(r, 6, &t->cpu_ns)) ||
		    (rc = r_u64(r, 7, &t->samples)))
			return rc;
	}
	return rc < 0 ? rc : 0;
}

/* Version 3 on; an older database reads as a profile without modules. */
static int read_modules(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if (r->version < 3)
		return 0;
	if ((rc = r_prepare(r, "modules", "SELECT id, process_id, path, base, low, "
			    "high, build_id FROM modules ORDER BY id")))
		return rc;
	while ((rc = r_step(r)) == 1) {
		struct ks_pmodule *m = ks_profile_push(p, modules);

		if (!m)
			return NOMEM();
		if ((rc = r_ref(r, 1, p->n_processes, false, &m->process)) ||
		    (rc = r_ref(r, 2, p->n_strings, false, &m->path)) ||
		    (rc = r_u64(r, 3, &m->base)) ||
		    (rc = r_u64(r, 4, &m->low)) ||
		    (rc = r_u64(r, 5, &m->high)) ||
		    (rc = r_ref(r, 6, p->n_strings, true, &m->build_id)))
			return rc;
	}
	return rc < 0 ? rc : 0;
}

static int read_counter_names(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "counter_names", "SELECT id, name FROM counter_names "
			    "ORDER BY id")))
		return rc;
	for (size_t i = 0; (rc = r_step(r)) == 1; i++) {
		uint32_t *n = ks_profile_push(p, counter_names);

		if (!n)
			return NOMEM();
		if ((rc = r_dense(r, i)) ||
		    (rc = r_ref(r, 1, p->n_strings, false, n)))
			return rc;
	}
	return rc < 0 ? rc : 0;
}

/* Samples in id order, each joined with its counter values.  Sample ids
 * need not be dense (rows deleted by hand are simply absent). */
static int read_samples(struct reader *r)
{
	struct ks_profile *p = r->p;
	size_t nc = p->n_counter_names;
	sqlite3_int64 prev = 0;
	struct ks_psample *s = NULL;
	char sql[256];
	int rc;

	/* Version 1 has no overrun column: each sample was one period. */
	snprintf(sql, sizeof(sql), "SELECT s.id, s.ts_ns, s.thread_id, s.stack_id, "
		 "s.clock, s.cpu_ns, s.minflt, s.majflt, c.counter_id, c.value, %s "
		 "FROM samples s LEFT JOIN sample_counters c ON c.sample_id = s.id "
		 "ORDER BY s.id, c.counter_id", r->version >= 2 ? "s.overrun" : "0");
	if ((rc = r_prepare(r, "samples", sql)))
		return rc;
	while ((rc = r_step(r)) == 1) {
		sqlite3_int64 id = sqlite3_column_int64(r->st, 0);
		uint32_t cid = 0;
		uint64_t val = 0;
		int64_t clk = 0;

		if (!s || id != prev) {
			if (sqlite3_column_type(r->st, 0) != SQLITE_INTEGER)
				return r_damaged(r, 0, "expected an integer id");
			s = ks_profile_push(p, samples);
			if (!s)
				return NOMEM();
			if ((rc = r_u64(r, 1, &s->ts)) ||
			    (rc = r_ref(r, 2, p->n_threads, false, &s->thread)) ||
			    (rc = r_ref(r, 3, p->n_nodes, true, &s->node)) ||
			    (rc = r_int(r, 4, 0, UINT8_MAX, &clk)) ||
			    (rc = r_u64(r, 5, &s->cpu_ns)) ||
			    (rc = r_u32(r, 6, &s->minflt)) ||
			    (rc = r_u32(r, 7, &s->majflt)) ||
			    (rc = r_u32(r, 10, &s->overrun)))
				return rc;
			s->clock = (uint8_t)clk;
			s->counters = KS_NONE;
			prev = id;
		}
		if (sqlite3_column_type(r->st, 8) == SQLITE_NULL)
			continue;
		r->table = "sample_counters";
		if ((rc = r_ref(r, 8, nc, false, &cid)) || (rc = r_u64(r, 9, &val)))
			return rc;
		r->table = "samples";
		if (s->counters == KS_NONE) {
			/* The sample's block of values, one per counter name;
			 * a counter without a row reads as 0. */
			if (p->n_counter_values > KS_NONE - 1 - nc)
				return ks_err_set(r->err, -EFBIG, "%s: too many "
						  "counter values", r->path);
			s->counters = (uint32_t)p->n_counter_values;
			for (size_t j = 0; j < nc; j++)
				if (!ks_profile_push(p, counter_values))
					return NOMEM();
		}
		p->counter_values[s->counters + cid] = val;
	}
	return rc < 0 ? rc : 0;
}

static int read_regions(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "regions", "SELECT id, thread_id, name, kind, depth, "
			    "start_ns, end_ns, bytes, peer, range_id FROM regions "
			    "ORDER BY id")))
		return rc;
	while ((rc = r_step(r)) == 1) {
		struct ks_pslice *s = ks_profile_push(p, slices);
		int64_t kind = 0;

		if (!s)
			return NOMEM();
		if ((rc = r_ref(r, 1, p->n_threads, false, &s->thread)) ||
		    (rc = r_ref(r, 2, p->n_strings, false, &s->name)) ||
		    (rc = r_int(r, 3, 0, UINT8_MAX, &kind)) ||
		    (rc = r_u32(r, 4, &s->depth)) ||
		    (rc = r_u64(r, 5, &s->start)) ||
		    (rc = r_u64(r, 6, &s->end)) ||
		    (rc = r_u64(r, 7, &s->bytes)) ||
		    (rc = r_i32(r, 8, &s->peer)) ||
		    (rc = r_u64(r, 9, &s->id)))
			return rc;
		s->kind = (uint8_t)kind;
	}
	return rc < 0 ? rc : 0;
}

static int read_counters(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "counters", "SELECT id, process_id, kind, ts_ns, value "
			    "FROM counters ORDER BY id")))
		return rc;
	while ((rc = r_step(r)) == 1) {
		struct ks_pcounter *c = ks_profile_push(p, counters);
		int t = sqlite3_column_type(r->st, 4);

		if (!c)
			return NOMEM();
		if ((rc = r_ref(r, 1, p->n_processes, false, &c->process)) ||
		    (rc = r_u32(r, 2, &c->kind)) ||
		    (rc = r_u64(r, 3, &c->ts)))
			return rc;
		if (t == SQLITE_NULL)
			c->value = NAN;
		else if (t == SQLITE_FLOAT || t == SQLITE_INTEGER)
			c->value = sqlite3_column_double(r->st, 4);
		else
			return r_damaged(r, 4, "expected a number or NULL");
	}
	return rc < 0 ? rc : 0;
}

/* meta without the store's own key, in order. */
static int read_meta(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "meta", "SELECT id, key, value FROM meta ORDER BY id")))
		return rc;
	while ((rc = r_step(r)) == 1) {
		const char *k = (const char *)sqlite3_column_text(r->st, 1);
		const char *v = (const char *)sqlite3_column_text(r->st, 2);

		if (sqlite3_column_type(r->st, 1) != SQLITE_TEXT)
			return r_damaged(r, 1, "expected text");
		if (sqlite3_column_type(r->st, 2) != SQLITE_TEXT)
			return r_damaged(r, 2, "expected text");
		if (strcmp(k, VERSION_KEY) == 0)
			continue;
		if (ks_profile_meta(p, k, v) != 0)
			return NOMEM();
	}
	return rc < 0 ? rc : 0;
}

/* The one row of table sampling. */
static int read_sampling(struct reader *r)
{
	struct ks_profile *p = r->p;
	int rc;

	if ((rc = r_prepare(r, "sampling", "SELECT rowid, cputime_freq, "
			    "realtime_freq, dropped_samples FROM sampling")))
		return rc;
	if ((rc = r_step(r)) < 0)
		return rc;
	if (rc == 0)
		return ks_err_set(r->err, -EBADMSG, "%s is damaged: table sampling "
				  "is empty", r->path);
	if ((rc = r_u32(r, 1, &p->cputime_freq)) ||
	    (rc = r_u32(r, 2, &p->realtime_freq)) ||
	    (rc = r_u64(r, 3, &p->dropped_samples)))
		return rc;
	if ((rc = r_step(r)) < 0)
		return rc;
	if (rc == 1)
		return ks_err_set(r->err, -EBADMSG, "%s is damaged: table sampling "
				  "has more than one row", r->path);
	return 0;
}

int ks_store_read(const char *path, struct ks_profile *p, struct ks_err *err)
{
	struct reader r = { .path = path, .err = err, .p = p };
	int rc;

	if (sqlite3_open_v2(path, &r.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = db_fail(r.db, err, path, "cannot open");
		goto out;
	}
	if ((rc = read_version(&r)) ||
	    (rc = r_prepare(&r, "meta", "BEGIN")) || (rc = r_step(&r)) < 0 ||
	    (rc = read_strings(&r)) ||
	    (rc = read_frames(&r)) ||
	    (rc = read_stacks(&r)) ||
	    (rc = read_processes(&r)) ||
	    (rc = read_threads(&r)) ||
	    (rc = read_modules(&r)) ||
	    (rc = read_counter_names(&r)) ||
	    (rc = read_samples(&r)) ||
	    (rc = read_regions(&r)) ||
	    (rc = read_counters(&r)) ||
	    (rc = read_meta(&r)) ||
	    (rc = read_sampling(&r)))
		goto out;
	rc = 0;
out:
	sqlite3_finalize(r.st);
	if (r.db)
		sqlite3_close(r.db);
	return rc;
}
