/*
 * kscope merge: combines the per-rank results of an MPI `kscope sample`
 * run (and of `kscope instrument`, whose databases instr_db.c merges).
 * Under mpirun every rank writes its own run directory rank<N>/
 * inside one shared directory DIR; merge reads each rank<N>/profile.db
 * and writes DIR/profile.db, one profile with every rank's processes
 * (their rank column set to N), and DIR/trace.perfetto-trace, a timeline
 * with a process track per rank.
 *
 * Every id is remapped: strings, frames and call paths that ranks share
 * become one, so the call tree and flat profile are of the whole job,
 * while samples keep their thread, and threads their process and rank.
 * Each rank's times are relative to its own start; when every rank
 * recorded the wall-clock time of its start (meta start_realtime_ns),
 * they are moved onto one time line, else each rank starts at 0.
 *
 * DIR exists and was not created by this run, so merge refuses to
 * replace anything in it: both files are written under temporary names
 * and renamed with RENAME_NOREPLACE, and a failure leaves neither.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "argcheck.h"
#include "cli.h"
#include "log.h"
#include "outdir.h"
#include "instr_db.h"
#include "profile.h"
#include "report_instr.h"
#include "store.h"
#include "trace.h"

#define DB_NAME "profile.db"
#define TRACE_NAME "trace.perfetto-trace"
#define START_KEY "start_realtime_ns"

struct merge_opts {
	struct ks_common_opts common;
};

static const struct ks_opt merge_opts[] = {
	KS_COMMON_OPTS(struct merge_opts),
	KS_OPT_END
};

static const struct ks_opt merge_dir = {
	.name = "DIR", .type = KS_OPT_PATH, .metavar = "DIR",
	.flags = KS_PATH_DIR | KS_PATH_READ | KS_PATH_EXEC,
};

/* ------------------------------------------------------------------ */
/* Finding the ranks                                                   */
/* ------------------------------------------------------------------ */

struct rank_dir {
	int32_t rank;
	char name[32];         /* "rank<N>" as found */
};

static int cmp_rank(const void *a, const void *b)
{
	const struct rank_dir *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The rank<N>/ directories of DIR that hold a profile.db, by rank.  Those
 * without one (a rank that did not finish) are reported and left out. */
static int find_ranks(int dirfd, const char *dir, struct rank_dir **out,
		      size_t *n, struct ks_err *err)
{
	struct rank_dir *v = NULL;
	size_t cap = 0, k = 0;
	struct dirent *de;
	int fd = dup(dirfd), rc = 0;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		rc = ks_err_set(err, -errno, "cannot list '%s': %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return rc;
	}
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		char db[64];
		struct stat st;
		long r;

		if (strncmp(s, "rank", 4) != 0 || !s[4] || strlen(s) > 13 ||
		    strspn(s + 4, "0123456789") != strlen(s + 4))
			continue;
		r = strtol(s + 4, NULL, 10);
		if (fstatat(dirfd, s, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode)) {
			ks_warn("'%s/%s' is not a directory; left out", dir, s);
			continue;
		}
		snprintf(db, sizeof(db), "%s/" DB_NAME, s);
		if (fstatat(dirfd, db, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode)) {
			ks_warn("'%s/%s' has no " DB_NAME " (the rank did not finish?); "
				"left out", dir, s);
			continue;
		}
		if (k == cap) {
			struct rank_dir *nv;

			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			v = nv;
		}
		v[k].rank = (int32_t)r;
		snprintf(v[k].name, sizeof(v[k].name), "%s", s);
		k++;
	}
	qsort(v, k, sizeof(*v), cmp_rank);
	for (size_t i = 1; i < k; i++)
		if (v[i].rank == v[i - 1].rank) {
			rc = ks_err_set(err, -EINVAL, "'%s' has two directories for rank "
					"%" PRId32 ": %s and %s", dir, v[i].rank,
					v[i - 1].name, v[i].name);
			goto out;
		}
	if (k == 0)
		rc = ks_err_set(err, -ENOENT, "'%s' has no rank<N>/" DB_NAME "; "
				"accepted: the directory that 'kscope sample' or 'kscope "
				"instrument' under mpirun wrote", dir);
out:
	closedir(d);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = k;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Merging profiles                                                    */
/* ------------------------------------------------------------------ */

/* Where one rank's elements start in the merged profile. */
struct span {
	int32_t rank;
	size_t processes, threads, samples, slices, counters; /* first indexes */
	size_t ncounters;      /* per-sample counter values its samples have */
	uint64_t start_real;   /* its start_realtime_ns */
	bool has_start;
};

struct kv {
	int32_t rank;
	char *key, *value;
};

struct merge {
	struct ks_profile out;
	struct span *spans;    /* one a rank, in rank order */
	size_t nspans;
	struct kv *kv;         /* every rank's metadata, in order */
	size_t nkv, capkv;
};

static void merge_free(struct merge *m)
{
	ks_profile_free(&m->out);
	free(m->spans);
	for (size_t i = 0; i < m->nkv; i++) {
		free(m->kv[i].key);
		free(m->kv[i].value);
	}
	free(m->kv);
}

static int add_kv(struct merge *m, int32_t rank, const char *k, const char *v)
{
	struct kv *e = ks_profile_grow((void **)&m->kv, &m->nkv, &m->capkv,
				       sizeof(*m->kv));

	if (!e)
		return -ENOMEM;
	e->rank = rank;
	e->key = strdup(k);
	e->value = strdup(v);
	return e->key && e->value ? 0 : -ENOMEM;
}

/* Appends the profile of one rank to m->out, remapping every id. */
static int merge_rank(struct merge *m, const struct ks_profile *in, int32_t rank,
		      struct span *sp)
{
	struct ks_profile *out = &m->out;
	uint32_t *smap = calloc(in->n_strings + 1, sizeof(*smap));
	uint32_t *fmap = calloc(in->n_frames + 1, sizeof(*fmap));
	uint32_t *nmap = calloc(in->n_nodes + 1, sizeof(*nmap));
	uint32_t *cmap = calloc(in->n_counter_names + 1, sizeof(*cmap));
	int rc = -ENOMEM;

#define REMAP_STR(id) ((id) == KS_NONE ? KS_NONE : smap[id])
	if (!smap || !fmap || !nmap || !cmap)
		goto out;
	for (size_t i = 0; i < in->n_strings; i++)
		if ((smap[i] = ks_profile_intern(out, in->strings[i])) == KS_NONE)
			goto out;
	for (size_t i = 0; i < in->n_frames; i++) {
		struct ks_pframe f = in->frames[i];

		f.function = smap[f.function];
		f.file = REMAP_STR(f.file);
		f.module = smap[f.module];
		if ((fmap[i] = ks_profile_frame(out, &f)) == KS_NONE)
			goto out;
	}
	/* In id order, so a parent is mapped before its children. */
	for (size_t i = 0; i < in->n_nodes; i++) {
		uint32_t par = in->nodes[i].parent;

		nmap[i] = ks_profile_node(out, par == KS_NONE ? KS_NONE : nmap[par],
					  fmap[in->nodes[i].frame]);
		if (nmap[i] == KS_NONE)
			goto out;
	}
	for (size_t j = 0; j < in->n_counter_names; j++) {
		uint32_t name = smap[in->counter_names[j]];
		size_t c = 0;

		while (c < out->n_counter_names && out->counter_names[c] != name)
			c++;
		if (c == out->n_counter_names) {
			uint32_t *slot = ks_profile_push(out, counter_names);

			if (!slot)
				goto out;
			*slot = name;
		}
		cmap[j] = (uint32_t)c;
	}

	sp->rank = rank;
	sp->processes = out->n_processes;
	sp->threads = out->n_threads;
	sp->samples = out->n_samples;
	sp->slices = out->n_slices;
	sp->counters = out->n_counters;
	sp->ncounters = out->n_counter_names;

	for (size_t i = 0; i < in->n_processes; i++) {
		struct ks_pprocess *x = ks_profile_push(out, processes);

		if (!x)
			goto out;
		*x = in->processes[i];
		x->command = smap[x->command];
		if (x->rank >= 0 && x->rank != rank)
			ks_warn("rank%" PRId32 "/ holds process %" PRId32 " of MPI rank %"
				PRId32 "; it is counted as rank %" PRId32, rank, x->pid,
				x->rank, rank);
		x->rank = rank;
	}
	for (size_t i = 0; i < in->n_threads; i++) {
		struct ks_pthread *t = ks_profile_push(out, threads);

		if (!t)
			goto out;
		*t = in->threads[i];
		t->process += (uint32_t)sp->processes;
		t->name = smap[t->name];
	}
	for (size_t i = 0; i < in->n_samples; i++) {
		const struct ks_psample *is = &in->samples[i];
		struct ks_psample *s = ks_profile_push(out, samples);

		if (!s)
			goto out;
		*s = *is;
		s->thread += (uint32_t)sp->threads;
		s->node = is->node == KS_NONE ? KS_NONE : nmap[is->node];
		if (is->counters == KS_NONE || in->n_counter_names == 0) {
			s->counters = KS_NONE;
			continue;
		}
		if (out->n_counter_values > KS_NONE - 1 - sp->ncounters)
			goto out;
		s->counters = (uint32_t)out->n_counter_values;
		for (size_t j = 0; j < sp->ncounters; j++)
			if (!ks_profile_push(out, counter_values))
				goto out;
		for (size_t j = 0; j < in->n_counter_names; j++)
			out->counter_values[s->counters + cmap[j]] =
				in->counter_values[is->counters + j];
	}
	for (size_t i = 0; i < in->n_slices; i++) {
		struct ks_pslice *s = ks_profile_push(out, slices);

		if (!s)
			goto out;
		*s = in->slices[i];
		s->thread += (uint32_t)sp->threads;
		s->name = smap[s->name];
	}
	for (size_t i = 0; i < in->n_modules; i++) {
		struct ks_pmodule *x = ks_profile_push(out, modules);

		if (!x)
			goto out;
		*x = in->modules[i];
		x->process += (uint32_t)sp->processes;
		x->path = smap[x->path];
		x->build_id = REMAP_STR(x->build_id);
	}
	for (size_t i = 0; i < in->n_counters; i++) {
		struct ks_pcounter *c = ks_profile_push(out, counters);

		if (!c)
			goto out;
		*c = in->counters[i];
		c->process += (uint32_t)sp->processes;
	}
	for (size_t i = 0; i < in->n_meta; i++) {
		const char *k = in->strings[in->meta[i].key];
		const char *v = in->strings[in->meta[i].value];

		if (strcmp(k, START_KEY) == 0) {
			char *end;

			errno = 0;
			sp->start_real = strtoull(v, &end, 10);
			sp->has_start = !errno && end != v && !*end;
		}
		if (add_kv(m, rank, k, v))
			goto out;
	}
	out->dropped_samples += in->dropped_samples;
	rc = 0;
#undef REMAP_STR
out:
	free(smap);
	free(fmap);
	free(nmap);
	free(cmap);
	return rc;
}

/* Ranks merged before a later rank brought new per-sample counters have
 * shorter blocks of values: lays every block out for all the counters,
 * the missing ones 0. */
static int widen_counters(struct merge *m)
{
	struct ks_profile *out = &m->out;
	size_t k = out->n_counter_names, r = 0, n = 0;
	uint64_t *v;
	bool needed = false;

	for (size_t i = 0; i < m->nspans; i++)
		needed |= m->spans[i].ncounters != k;
	if (!needed)
		return 0;
	for (size_t i = 0; i < out->n_samples; i++)
		n += out->samples[i].counters != KS_NONE;
	if (n > (KS_NONE - 1) / (k ? k : 1))
		return -EFBIG;
	v = calloc(n * k + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < out->n_samples; i++) {
		struct ks_psample *s = &out->samples[i];

		while (r + 1 < m->nspans && i >= m->spans[r + 1].samples)
			r++;
		if (s->counters == KS_NONE)
			continue;
		memcpy(v + n, out->counter_values + s->counters,
		       m->spans[r].ncounters * sizeof(*v));
		s->counters = (uint32_t)n;
		n += k;
	}
	free(out->counter_values);
	out->counter_values = v;
	out->n_counter_values = n;
	out->cap_counter_values = n + 1;
	return 0;
}

/* Moves each rank onto the common time line: by the wall-clock time of
 * its start, when every rank has one. */
static bool align_times(struct merge *m, uint64_t *origin)
{
	struct ks_profile *out = &m->out;
	uint64_t min = UINT64_MAX;

	for (size_t r = 0; r < m->nspans; r++) {
		if (!m->spans[r].has_start)
			return false;
		if (m->spans[r].start_real < min)
			min = m->spans[r].start_real;
	}
	*origin = min;
	for (size_t r = 0; r < m->nspans; r++) {
		const struct span *sp = &m->spans[r];
		size_t np = r + 1 < m->nspans ? sp[1].processes : out->n_processes;
		size_t nt = r + 1 < m->nspans ? sp[1].threads : out->n_threads;
		size_t ns = r + 1 < m->nspans ? sp[1].samples : out->n_samples;
		size_t nl = r + 1 < m->nspans ? sp[1].slices : out->n_slices;
		size_t nc = r + 1 < m->nspans ? sp[1].counters : out->n_counters;
		uint64_t d = sp->start_real - min;

		for (size_t i = sp->processes; i < np; i++) {
			out->processes[i].start += d;
			out->processes[i].end += d;
		}
		for (size_t i = sp->threads; i < nt; i++) {
			out->threads[i].start += d;
			out->threads[i].end += d;
		}
		for (size_t i = sp->samples; i < ns; i++)
			out->samples[i].ts += d;
		for (size_t i = sp->slices; i < nl; i++) {
			out->slices[i].start += d;
			out->slices[i].end += d;
		}
		for (size_t i = sp->counters; i < nc; i++)
			out->counters[i].ts += d;
	}
	return true;
}

/* The merged metadata: what the merge did, then every key of the ranks,
 * once when all ranks agree on it, else per rank as "rank<N>.KEY". */
static int merge_meta(struct merge *m, bool aligned, uint64_t origin)
{
	struct ks_profile *out = &m->out;
	char *ranks = NULL, num[32];
	size_t len = 0, cap = 0;
	int rc = -ENOMEM;

	for (size_t r = 0; r < m->nspans; r++) {
		int n = snprintf(num, sizeof(num), "%s%" PRId32, r ? "," : "",
				 m->spans[r].rank);

		if (len + (size_t)n + 1 > cap) {
			char *nr;

			cap = (len + (size_t)n + 1) * 2;
			if (!(nr = realloc(ranks, cap)))
				goto out;
			ranks = nr;
		}
		memcpy(ranks + len, num, (size_t)n + 1);
		len += (size_t)n;
	}
	if (ks_profile_meta(out, "merged_ranks", ranks ? ranks : ""))
		goto out;
	if (ks_profile_meta(out, "time_alignment", aligned ? START_KEY
			    : "none: each rank's times start at its own start"))
		goto out;
	if (aligned) {
		snprintf(num, sizeof(num), "%" PRIu64, origin);
		if (ks_profile_meta(out, START_KEY, num))
			goto out;
	}
	for (size_t i = 0; i < m->nkv; i++) {
		const struct kv *e = &m->kv[i];
		bool first = true, same = true;
		size_t count = 0;

		/* Handle each key once, at its first appearance. */
		for (size_t j = 0; j < i && first; j++)
			first = strcmp(m->kv[j].key, e->key) != 0;
		if (!first)
			continue;
		for (size_t j = i; j < m->nkv; j++)
			if (strcmp(m->kv[j].key, e->key) == 0) {
				count++;
				same &= strcmp(m->kv[j].value, e->value) == 0;
			}
		if (same && count == m->nspans && strcmp(e->key, START_KEY) != 0) {
			if (ks_profile_meta(out, e->key, e->value))
				goto out;
			continue;
		}
		for (size_t j = i; j < m->nkv; j++) {
			char *key;

			if (strcmp(m->kv[j].key, e->key) != 0)
				continue;
			if (asprintf(&key, "rank%" PRId32 ".%s", m->kv[j].rank,
				     e->key) < 0)
				goto out;
			rc = ks_profile_meta(out, key, m->kv[j].value);
			free(key);
			if (rc)
				goto out;
			rc = -ENOMEM;
		}
	}
	rc = 0;
out:
	free(ranks);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Writing into DIR                                                    */
/* ------------------------------------------------------------------ */

static int write_trace(const char *dir, int dirfd, const struct ks_profile *p,
		       struct ks_err *err)
{
	/* DIR as a run directory, for the outfile calls; not closed here. */
	struct ks_rundir rd = { .path = strdup(dir), .dirfd = dirfd };
	struct ks_outfile of;
	int rc;

	if (!rd.path)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if ((rc = ks_outfile_open(&rd, TRACE_NAME, &of, err))) {
		if (rc == -EEXIST)
			ks_err_set(err, rc, "'." TRACE_NAME ".part' exists: another "
				   "merge is writing it, or an interrupted one left it "
				   "(then remove it)");
		goto out;
	}
	if ((rc = ks_trace_write_perfetto(p, &of, err))) {
		ks_outfile_abort(&of);
		goto out;
	}
	rc = ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
	if (rc == -EEXIST)
		ks_err_set(err, rc, "writing '%s' failed: it appeared meanwhile, and "
			   "merge replaces nothing", TRACE_NAME);
out:
	free(rd.path);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The command                                                         */
/* ------------------------------------------------------------------ */

/* Logs which ranks between the first and the last are missing. */
static void warn_gaps(const struct rank_dir *v, size_t n)
{
	int32_t expect = 0;
	size_t missing = 0;

	for (size_t i = 0; i < n; expect = v[i].rank + 1, i++)
		missing += (size_t)(v[i].rank - expect);
	if (missing)
		ks_warn("%zu rank%s between 0 and %" PRId32 " ha%s no results; the "
			"merged profile lacks %s", missing, missing == 1 ? "" : "s",
			v[n - 1].rank, missing == 1 ? "s" : "ve",
			missing == 1 ? "it" : "them");
}

/* The ranks of a `kscope instrument` run under mpirun (instr_db.c). */
static int merge_instr(const char *dir, const struct rank_dir *ranks, size_t n)
{
	char **dbs = calloc(n, sizeof(*dbs));
	int32_t *rk = calloc(n, sizeof(*rk));
	struct ks_err err;
	int status = KS_EXIT_OK;

	ks_err_clear(&err);
	for (size_t i = 0; dbs && rk && i < n; i++) {
		rk[i] = ranks[i].rank;
		if (asprintf(&dbs[i], "%s/%s/" DB_NAME, dir, ranks[i].name) < 0)
			dbs[i] = NULL;
		if (!dbs[i] || !ks_report_instr_is(dbs[i])) {
			ks_error("argument DIR: %s/%s/" DB_NAME " is not a kscope instrument "
				 "database, as rank %" PRId32 "'s is: the ranks are of different "
				 "runs", dir, ranks[i].name, ranks[0].rank);
			status = KS_EXIT_USAGE;
			goto out;
		}
	}
	if (!dbs || !rk) {
		ks_error("out of memory");
		status = KS_EXIT_FAIL;
		goto out;
	}
	if (ks_idb_merge(dir, (const char *const *)dbs, rk, n, &err)) {
		ks_error("%s", err.msg);
		status = KS_EXIT_FAIL;
		goto out;
	}
	ks_info("merged %zu rank%s of kscope instrument into %s/" DB_NAME " and %s/"
		TRACE_NAME, n, n == 1 ? "" : "s", dir, dir);
out:
	for (size_t i = 0; dbs && i < n; i++)
		free(dbs[i]);
	free(dbs);
	free(rk);
	return status;
}

static int merge_run(const struct ks_cmd *cmd, struct ks_parsed *pp)
{
	const char *dir = pp->positional[0];
	struct rank_dir *ranks = NULL;
	struct merge m;
	struct ks_err err;
	struct stat st;
	char why[256], db[PATH_MAX];
	size_t nranks = 0;
	uint64_t origin = 0;
	bool aligned;
	int dirfd, status = KS_EXIT_FAIL;

	(void)cmd;
	memset(&m, 0, sizeof(m));
	ks_err_clear(&err);
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		ks_error("argument DIR: cannot open '%s': %s", dir, strerror(errno));
		return KS_EXIT_USAGE;
	}
	/* merge writes into DIR: the rules for an output location apply. */
	if (fstat(dirfd, &st) != 0 || !ks_dir_is_safe(&st, geteuid(), why, sizeof(why))) {
		ks_error("argument DIR: '%s' %s; merge writes its results there",
			 dir, why);
		status = KS_EXIT_USAGE;
		goto out;
	}
	if (faccessat(dirfd, ".", W_OK, AT_EACCESS) != 0) {
		ks_error("argument DIR: '%s' is not writable by you; merge writes its "
			 "results there", dir);
		status = KS_EXIT_USAGE;
		goto out;
	}
	if (fstatat(dirfd, DB_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	    fstatat(dirfd, TRACE_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ks_error("argument DIR: '%s' holds a merged " DB_NAME " or " TRACE_NAME
			 " already; remove both to merge again", dir);
		status = KS_EXIT_USAGE;
		goto out;
	}
	if (find_ranks(dirfd, dir, &ranks, &nranks, &err)) {
		ks_error("argument DIR: %s", err.msg);
		status = err.code == -ENOMEM ? KS_EXIT_FAIL : KS_EXIT_USAGE;
		goto out;
	}
	warn_gaps(ranks, nranks);
	snprintf(db, sizeof(db), "%s/%s/" DB_NAME, dir, ranks[0].name);
	if (ks_report_instr_is(db)) {
		status = merge_instr(dir, ranks, nranks);
		goto out;
	}

	m.spans = calloc(nranks, sizeof(*m.spans));
	if (!m.spans || ks_profile_init(&m.out, &err) != 0) {
		ks_error("out of memory");
		goto out;
	}
	/* One rank in memory at a time, besides the merged profile. */
	for (size_t i = 0; i < nranks; i++) {
		struct ks_profile in;
		int rc;

		snprintf(db, sizeof(db), "%s/%s/" DB_NAME, dir, ranks[i].name);
		if (ks_profile_init(&in, &err) != 0 || ks_store_read(db, &in, &err) != 0) {
			ks_error("%s", err.msg);
			ks_profile_free(&in);
			goto out;
		}
		if (i == 0) {
			m.out.cputime_freq = in.cputime_freq;
			m.out.realtime_freq = in.realtime_freq;
		} else if (in.cputime_freq != m.out.cputime_freq ||
			   in.realtime_freq != m.out.realtime_freq) {
			ks_warn("rank %" PRId32 " sampled at other rates than rank %"
				PRId32 "; the merged profile gives rank %" PRId32
				"'s rates", ranks[i].rank, ranks[0].rank, ranks[0].rank);
		}
		rc = merge_rank(&m, &in, ranks[i].rank, &m.spans[i]);
		ks_profile_free(&in);
		m.nspans = i + 1;
		if (rc) {
			ks_error("merging %s: %s", db, strerror(-rc));
			goto out;
		}
	}
	if (widen_counters(&m) != 0) {
		ks_error("out of memory");
		goto out;
	}
	aligned = align_times(&m, &origin);
	if (!aligned)
		ks_info("not every rank recorded when it started; each rank's "
			"timeline starts at 0");
	if (merge_meta(&m, aligned, origin) != 0) {
		ks_error("out of memory");
		goto out;
	}

	snprintf(db, sizeof(db), "%s/" DB_NAME, dir);
	if (ks_store_write(&m.out, db, &err) != 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	/* A deliverable, read-only like every run's profile.db. */
	if (chmod(db, KS_DELIVERABLE_MODE) != 0 ||
	    write_trace(dir, dirfd, &m.out, &err) != 0) {
		if (err.code == 0)
			ks_err_set(&err, -errno, "cannot set the mode of %s: %s", db,
				   strerror(errno));
		ks_error("%s: %s", dir, err.msg);
		unlink(db); /* all or nothing: merging again must be possible */
		goto out;
	}
	printf(DB_NAME ": %zu rank%s, %zu process%s, %zu thread%s, %zu samples\n",
	       nranks, nranks == 1 ? "" : "s", m.out.n_processes,
	       m.out.n_processes == 1 ? "" : "es", m.out.n_threads,
	       m.out.n_threads == 1 ? "" : "s", m.out.n_samples);
	printf("results: %s\n", dir);
	status = KS_EXIT_OK;
out:
	merge_free(&m);
	free(ranks);
	close(dirfd);
	return status;
}

const struct ks_cmd ks_cmd_merge = {
	.name = "merge",
	.summary = "combine the per-rank results of an MPI sample or instrument run",
	.usage = "[options] DIR",
	.description =
		"DIR is the directory 'kscope sample' or 'kscope instrument' wrote\n"
		"under mpirun: one\n"
		"rank<N>/ run directory per rank, each with its profile.db.  merge\n"
		"writes DIR/profile.db, one profile of every rank (each process with\n"
		"its rank), and DIR/trace.perfetto-trace, a timeline with a process\n"
		"per rank.  Ranks without a profile.db are left out with a warning.\n"
		"merge never replaces a file: it refuses a DIR that holds a merged\n"
		"profile.db or trace already.  Read the result with 'kscope report\n"
		"DIR'.",
	.args = {
		.opts = merge_opts,
		.opts_size = sizeof(struct merge_opts),
		.positional = &merge_dir,
		.pos_min = 1,
		.pos_max = 1,
	},
	.run = merge_run,
};
