/*
 * kscope instrument: exact calls and time per function of an unmodified
 * x86-64 program, by patching the entries of its functions at run time
 * (docs/instrument.md).
 *
 * kscope checks the program (a dynamically linked x86-64 ELF file: the
 * runtime is preloaded) and the selection, and analyses it with ks_instr
 * (src/instrument): --list prints that analysis and stops.  Otherwise it
 * creates the run directory, writes functions.txt (the verdict of every
 * function), runs the program with libkscope-instr.so preloaded, which
 * analyses and patches the program itself before main, then reads each
 * process's instr.<pid>.txt and writes report.txt: per function, calls,
 * inclusive and exclusive time, min/mean/max per call, in total and per
 * thread; the top functions are printed on stderr.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "elfdeps.h"
#include "instr.h"
#include "log.h"
#include "outdir.h"
#include "profile.h"
#include "runprog.h"
#include "instr_db.h"
#include "mpirank.h"
#include "store.h"
#include "instr_attach.h"
#include "instr_counters.h"
#include "textout.h"
#include "trace.h"

#include <sqlite3.h>

#define KS_INSTR_LIBNAME "libkscope-instr.so"

extern char **environ;

struct instrument_opts {
	struct ks_common_opts common;
	bool list;
	int64_t min_insns;
	char *include;
	char *exclude;
	char *output;
	int64_t top;
	int64_t trace_limit;
	char *modules;
	int64_t pid;
	double duration;
	char *rewrite;
};

#define OPT(field) .offset = offsetof(struct instrument_opts, field)

static const struct ks_opt instrument_opts[] = {
	{ .name = "list", .type = KS_OPT_FLAG, .env = "KSCOPE_INSTRUMENT_LIST",
	  .flags = KS_OPT_HIDDEN_ENV,
	  .help = "print each function's verdict (instrumented, or left alone and why) "
		  "without running the program", OPT(list) },
	{ .name = "min-instructions", .type = KS_OPT_INT, .metavar = "N", .def = "0",
	  .env = "KSCOPE_INSTRUMENT_MIN_INSTRUCTIONS",
	  .help = "instrument only functions of at least N instructions",
	  OPT(min_insns), .min = 0, .max = 1000000 },
	{ .name = "include", .type = KS_OPT_STRING, .metavar = "REGEX",
	  .env = "KSCOPE_INSTRUMENT_INCLUDE",
	  .help = "instrument only functions whose name matches REGEX (POSIX extended)",
	  OPT(include), .max_len = 1024 },
	{ .name = "exclude", .type = KS_OPT_STRING, .metavar = "REGEX",
	  .env = "KSCOPE_INSTRUMENT_EXCLUDE",
	  .help = "leave alone functions whose name matches REGEX (POSIX extended)",
	  OPT(exclude), .max_len = 1024 },
	{ .name = "modules", .type = KS_OPT_STRING, .metavar = "REGEX",
	  .env = "KSCOPE_INSTRUMENT_MODULES",
	  .help = "instrument too the shared libraries, loaded at start, whose path matches "
		  "REGEX (POSIX extended); not the C library, the loader or the unwinder",
	  OPT(modules), .max_len = 1024 },
	{ .name = "top", .type = KS_OPT_INT, .metavar = "N", .def = "10",
	  .env = "KSCOPE_INSTRUMENT_TOP",
	  .help = "how many functions the summary on stderr shows", OPT(top),
	  .min = 0, .max = 100000 },
	{ .name = "trace-limit", .type = KS_OPT_INT, .metavar = "N", .def = "100000",
	  .env = "KSCOPE_INSTRUMENT_TRACE_LIMIT",
	  .help = "record the first N calls of each thread in the traces (trace.json, "
		  "trace.perfetto-trace); 0: no trace. Counts and times always cover "
		  "every call", OPT(trace_limit), .min = 0, .max = 10000000 },
	{ .name = "pid", .type = KS_OPT_INT, .metavar = "PID", .env = "KSCOPE_INSTRUMENT_PID",
	  .flags = KS_OPT_HIDDEN_ENV | KS_OPT_NO_PROGRAM,
	  .help = "attach to the running process PID instead of starting a program: patch "
		  "it, record until it ends or Ctrl+C (or --duration), then put its code "
		  "back and let it run on", OPT(pid), .min = 1, .max = INT32_MAX },
	{ .name = "duration", .type = KS_OPT_DOUBLE, .metavar = "SEC", .def = "0",
	  .env = "KSCOPE_INSTRUMENT_DURATION",
	  .help = "with --pid: detach after SEC seconds (0: when the process ends or on "
		  "Ctrl+C)", OPT(duration), .dmin = 0, .dmax = 86400 },
	{ .name = "rewrite", .type = KS_OPT_STRING, .metavar = "FILE",
	  .env = "KSCOPE_INSTRUMENT_REWRITE", .flags = KS_OPT_HIDDEN_ENV,
	  .help = "write FILE, a copy of PROGRAM with its functions patched in the file, "
		  "which runs itself under kscope instrument (with -o, --trace-limit, --top, "
		  "--modules as given now); run nothing", OPT(rewrite), .max_len = 4096 },
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created", OPT(output) },
	KS_COMMON_OPTS(struct instrument_opts),
	KS_OPT_END
};

/* ------------------------------------------------------------------ */
/* The verdicts                                                        */
/* ------------------------------------------------------------------ */

static void list_write(FILE *out, const struct ks_instr_image *img, bool rewritten)
{
	fprintf(out, "# %s: %s, symbols from %s%s\n", img->path, img->pie ? "PIE" : "not PIE",
		img->symtab ? img->symtab : "nowhere (no symbol table)",
		rewritten ? "; rewritten by kscope instrument --rewrite (its functions are "
		"patched in the file)" : "");
	fprintf(out, "%-32s %18s %8s %8s  %s\n", "function", "address", "size", "instrs",
		"verdict");
	for (size_t i = 0; i < img->nfuncs; i++) {
		const struct ks_instr_func *f = &img->funcs[i];

		fprintf(out, "%-32s 0x%016" PRIx64 " %8" PRIu64 " %8u  %s%s\n", f->name, f->addr,
			f->size, f->ninsns, f->patch ? "instrumented" : "left alone: ",
			f->patch ? "" : f->reason);
	}
	fprintf(out, "%zu functions: %zu instrumented, %zu left alone\n", img->nfuncs,
		img->npatch, img->nfuncs - img->npatch);
}

/* The libraries the program needs, directly or through others, whose
 * path matches re (--modules): their verdicts, as list_write prints the
 * program's, or why they are left alone.  Libraries are found as the
 * loader would (ks_elfdeps_resolve); the runtime decides again on what
 * was really loaded, and says what differs.  Adds the functions to be
 * instrumented to *npatch. */
static int modules_write(FILE *out, const char *prog, const char *re,
			 const struct ks_instr_sel *sel, size_t *npatch, struct ks_err *err)
{
	char *queue[256];
	size_t nq = 0, head = 0;
	regex_t rx;
	int rc = 0;

	if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0)
		return ks_err_set(err, -EINVAL, "option --modules: '%s' is not a regular "
				  "expression", re);
	queue[nq++] = strdup(prog);
	while (head < nq && !rc) {
		struct ks_elfdeps d = { 0 };
		char *path = queue[head++];
		struct ks_err e;

		if (!path)
			continue;
		ks_err_clear(&e);
		if (ks_elfdeps_read(path, (const char *const[]){ NULL }, &d, &e) == 0) {
			for (size_t i = 0; i < d.nneeded && nq < 256; i++) {
				char *lib = ks_elfdeps_resolve(path, &d, d.needed[i]);
				bool seen = false;

				for (size_t j = 0; lib && j < nq; j++)
					seen |= queue[j] && !strcmp(queue[j], lib);
				if (!lib || seen) {
					free(lib);
					continue;
				}
				queue[nq++] = lib;
			}
		}
		ks_elfdeps_free(&d);
		if (head == 1 || regexec(&rx, path, 0, NULL, 0) != 0)
			continue;
		{
			const char *why = ks_instr_module_refused(path);
			struct ks_instr_image img = { 0 };

			if (why) {
				fprintf(out, "\n# %s: left alone: %s\n", path, why);
				continue;
			}
			if (ks_instr_analyze(path, sel, &img, &e) != 0) {
				fprintf(out, "\n# %s: left alone: %s\n", path, e.msg);
			} else {
				fputc('\n', out);
				list_write(out, &img, false);
				*npatch += img.npatch;
			}
			ks_instr_image_free(&img);
		}
	}
	for (size_t i = 0; i < nq; i++)
		free(queue[i]);
	regfree(&rx);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The results                                                         */
/* ------------------------------------------------------------------ */

struct fstat_row {
	char *name;
	uint64_t calls, closed;
	double incl, excl, sum, min, max;
	double cpu_incl, cpu_excl;  /* CPU ns, when every thread's is known */
	bool cpu_unknown;           /* a thread's calls with no CPU clock */
};

struct table {
	struct fstat_row *v;
	size_t n, cap;
};

static struct fstat_row *table_get(struct table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].name, name))
			return &t->v[i];
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct fstat_row *v = realloc(t->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	memset(&t->v[t->n], 0, sizeof(t->v[0]));
	t->v[t->n].name = strdup(name);
	if (!t->v[t->n].name)
		return NULL;
	return &t->v[t->n++];
}

/* cpu_incl and cpu_excl: negative when the thread had no CPU clock. */
static void table_add(struct fstat_row *r, uint64_t calls, uint64_t closed, double incl,
		      double excl, double sum, double min, double max, double cpu_incl,
		      double cpu_excl)
{
	if (cpu_incl < 0 || cpu_excl < 0)
		r->cpu_unknown = true;
	else {
		r->cpu_incl += cpu_incl;
		r->cpu_excl += cpu_excl;
	}
	if (closed && (!r->closed || min < r->min))
		r->min = min;
	if (max > r->max)
		r->max = max;
	r->calls += calls;
	r->closed += closed;
	r->incl += incl;
	r->excl += excl;
	r->sum += sum;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].name);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

static int cmp_incl(const void *pa, const void *pb)
{
	const struct fstat_row *a = pa, *b = pb;

	if (a->incl != b->incl)
		return a->incl > b->incl ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void table_write(struct ks_outfile *of, FILE *f, struct table *t, const char *indent,
			size_t limit)
{
	if (t->n)  /* qsort wants a pointer even for nothing */
		qsort(t->v, t->n, sizeof(t->v[0]), cmp_incl);
	for (size_t i = 0; i < t->n && i < limit; i++) {
		const struct fstat_row *r = &t->v[i];
		char line[1024], ci[32] = "-", cx[32] = "-";

		if (!r->cpu_unknown) {
			snprintf(ci, sizeof(ci), "%.0f", r->cpu_incl);
			snprintf(cx, sizeof(cx), "%.0f", r->cpu_excl);
		}
		snprintf(line, sizeof(line),
			 "%s%-32s %12" PRIu64 " %14.0f %14.0f %14s %14s %12.1f %12.0f %12.0f\n",
			 indent, r->name, r->calls, r->incl, r->excl, ci, cx,
			 r->closed ? r->sum / r->closed : 0.0, r->min, r->max);
		if (of)
			ks_outfile_printf(of, "%s", line);
		if (f)
			fputs(line, f);
	}
}

#define TABLE_HEAD "%s%-32s %12s %14s %14s %14s %14s %12s %12s %12s\n"
#define TABLE_COLS "function", "calls", "incl", "excl", "incl cpu", "excl cpu", "mean", \
	"min", "max"

/* Call-graph edges, by name: rows are added as read, then sorted and
 * merged (edges_merge), so that functions of the same name in several
 * processes, or a name two static functions share, add up. */
struct edge_row {
	char *caller, *callee;
	uint64_t calls;
	double incl;
};

struct edges {
	struct edge_row *v;
	size_t n, cap;
};

static int edges_add(struct edges *e, const char *caller, const char *callee, uint64_t calls,
		     double incl)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? 2 * e->cap : 64;
		struct edge_row *v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n].caller = strdup(caller);
	e->v[e->n].callee = strdup(callee);
	if (!e->v[e->n].caller || !e->v[e->n].callee) {
		free(e->v[e->n].caller);
		free(e->v[e->n].callee);
		return -ENOMEM;
	}
	e->v[e->n].calls = calls;
	e->v[e->n].incl = incl;
	e->n++;
	return 0;
}

static int cmp_edge_names(const void *pa, const void *pb)
{
	const struct edge_row *a = pa, *b = pb;
	int c = strcmp(a->callee, b->callee);

	return c ? c : strcmp(a->caller, b->caller);
}

static int cmp_edge_incl(const void *pa, const void *pb)
{
	const struct edge_row *a = pa, *b = pb;

	if (a->incl != b->incl)
		return a->incl > b->incl ? -1 : 1;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	return cmp_edge_names(pa, pb);
}

/* Adds up rows of the same edge, then orders by time, then calls. */
static void edges_merge(struct edges *e)
{
	size_t w = 0;

	if (!e->n)
		return;
	qsort(e->v, e->n, sizeof(e->v[0]), cmp_edge_names);
	for (size_t i = 0; i < e->n; i++) {
		if (w && !cmp_edge_names(&e->v[w - 1], &e->v[i])) {
			e->v[w - 1].calls += e->v[i].calls;
			e->v[w - 1].incl += e->v[i].incl;
			free(e->v[i].caller);
			free(e->v[i].callee);
			continue;
		}
		e->v[w++] = e->v[i];
	}
	e->n = w;
	qsort(e->v, e->n, sizeof(e->v[0]), cmp_edge_incl);
}

static void edges_free(struct edges *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->v[i].caller);
		free(e->v[i].callee);
	}
	free(e->v);
	memset(e, 0, sizeof(*e));
}

#define EDGE_HEAD "%-32s %-32s %12s %14s\n"

static void edges_write(struct ks_outfile *of, const struct edges *e)
{
	ks_outfile_printf(of, EDGE_HEAD, "caller", "callee", "calls", "incl");
	for (size_t i = 0; i < e->n; i++)
		ks_outfile_printf(of, "%-32s %-32s %12" PRIu64 " %14.0f\n", e->v[i].caller,
				  e->v[i].callee, e->v[i].calls, e->v[i].incl);
}

struct results {
	struct table total;
	struct table *threads;      /* one per thread, over every process */
	struct edges total_edges;
	struct edges *thread_edges; /* one per thread */
	uint64_t lost;              /* calls no call-graph edge took */
	/* The traces: a process per instr.<pid>.txt, a thread per thread
	 * line, a KS_SLICE_CALL slice per "c" line. */
	struct ks_profile trace;
	bool trace_ready;
	struct ks_idb *db;          /* profile.db being written, or NULL */
	int rank;                   /* the MPI rank, -1 outside MPI */
	uint64_t traced, untraced;  /* calls in the traces, past the limit */
	char modnotes[8][PATH_MAX + 200]; /* libraries the runtime left alone */
	size_t nmodnotes;
	char cpunote[256];          /* why a thread had no CPU clock (the first) */
	size_t nocpu;               /* threads without one */
	char (*thread_names)[48];
	size_t nthreads;
	size_t nprocs;
	uint64_t unwound, overflow, open;
	char errors[4][KS_ERR_MSG_MAX + 64];
	size_t nerrors;
	char late[8][300];
	size_t nlate;
};


/* "ID DEPTH START END", the rest of a "c" line, without sscanf (a trace
 * has a line per call). */
static bool parse_call(const char *p, unsigned long *id, unsigned long *depth,
		       unsigned long *t0, unsigned long *t1)
{
	unsigned long *v[4] = { id, depth, t0, t1 };

	for (int i = 0; i < 4; i++) {
		char *end;

		if (*p < '0' || *p > '9')
			return false;
		errno = 0;
		*v[i] = strtoul(p, &end, 10);
		if (errno || (i < 3 ? *end != ' ' : *end != '\0'))
			return false;
		p = end + (i < 3);
	}
	return true;
}

/* More functions than any program has (the runtime allows UINT32_MAX / 2):
 * a file declaring more is damaged. */
#define FUNCS_MAX (1ul << 24)

/* Reads one instr.<pid>.txt (docs/instrument.md) into r. */
static int results_read(struct results *r, int dirfd, const char *name, struct ks_err *err)
{
	char **names = NULL;
	int64_t *rows = NULL;     /* per function id: its row in profile.db */
	size_t nnames = 0;
	int64_t db_proc = -1, db_thread = -1;
	char *line = NULL;
	size_t cap = 0;
	struct table *cur = NULL;
	int fd, rc = 0, pid = 0;
	FILE *f;
	bool ended = false;
	uint32_t proc = KS_NONE, thread = KS_NONE; /* in r->trace */
	char module[256] = "";      /* the library of the "f" lines that follow */
	size_t declared = 0;        /* functions the "functions" and "module" lines give */

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(f = fdopen(fd, "r"))) {
		if (fd >= 0)
			close(fd);
		return ks_err_set(err, -errno, "cannot read %s: %s", name, strerror(errno));
	}
	r->nprocs++;
	while (getline(&line, &cap, f) > 0) {
		char *nl = strchr(line, '\n');
		unsigned long id, calls, closed, a, b, c, lost = 0;
		double incl, excl, sum, mn, mx, ci = -1, cx = -1;
		long caller;
		int n = 0, tid, cpu = 0;

		if (nl)
			*nl = '\0';
		/* The traced calls first: most lines of a traced run are these. */
		if (line[0] == 'c' && line[1] == ' ' && parse_call(line + 2, &id, &a, &b, &c)) {
			if (!cur || id >= nnames || !names[id] || a > UINT32_MAX) {
				rc = ks_err_set(err, -EINVAL, "%s: a traced call of an unknown "
						"function", name);
				goto out;
			}
			if (thread != KS_NONE) {
				if (ks_idb_trace_call(&r->trace, thread, names[id], (uint32_t)a, b,
						      c)) {
					rc = ks_err_set(err, -ENOMEM, "out of memory");
					goto out;
				}
				r->traced++;
			}
			if (r->db && db_thread >= 0 && rows[id] >= 0) {
				int64_t v[5] = { db_thread, rows[id], (int64_t)a, (int64_t)b,
						 (int64_t)c };

				if (ks_idb_put(r->db, IDB_CALL, 5, v, NULL, err) < 0) {
					rc = -EIO;
					goto out;
				}
			}
			continue;
		}
		if (sscanf(line, "pid %d", &pid) == 1)
			continue;
		if (!strncmp(line, "exe ", 4) && r->db) {
			const char *t[3] = { NULL, line + 4, NULL };
			int64_t v[3] = { pid, 0, r->rank };

			if ((db_proc = ks_idb_put(r->db, IDB_PROCESS, 3, v, t, err)) < 0) {
				rc = -EIO;
				goto out;
			}
		}
		if (!strncmp(line, "exe ", 4) && r->trace_ready) {
			struct ks_pprocess *pr = ks_profile_push(&r->trace, processes);

			if (!pr || (pr->command = ks_profile_intern(&r->trace, line + 4)) == KS_NONE) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			pr->pid = pid;
			pr->rank = r->rank;
			proc = (uint32_t)(r->trace.n_processes - 1);
			continue;
		}
		if (!strncmp(line, "error ", 6)) {
			if (r->nerrors < 4)
				snprintf(r->errors[r->nerrors++], sizeof(r->errors[0]), "process %d: %s",
					 pid, line + 6);
			continue;
		}
		if (!strncmp(line, "module ", 7)) {
			/* "module FIRST COUNT PATCHED 0xBIAS PATH": PATH may hold spaces. */
			const char *path, *base;

			unsigned long first = 0, count = 0;

			n = 0;
			sscanf(line, "module %lu %lu %*u %*x %n", &first, &count, &n);
			if (first < FUNCS_MAX && count < FUNCS_MAX && first + count > declared)
				declared = first + count;
			path = n > 0 ? line + n : "?";
			base = strrchr(path, '/');
			snprintf(module, sizeof(module), "%s", base ? base + 1 : path);
			continue;
		}
		if (!strncmp(line, "cpunote ", 8)) {
			if (!r->cpunote[0])
				snprintf(r->cpunote, sizeof(r->cpunote), "%s", line + 8);
			continue;
		}
		if (!strncmp(line, "modnote ", 8)) {
			if (r->nmodnotes < 8)
				snprintf(r->modnotes[r->nmodnotes++], sizeof(r->modnotes[0]),
					 "%s", line + 8);
			continue;
		}
		if (!strncmp(line, "r ", 2)) {
			if (r->nlate < 8)
				snprintf(r->late[r->nlate++], sizeof(r->late[0]), "%s", line + 2);
			continue;
		}
		if (sscanf(line, "functions %lu %lu", &a, &b) == 2) {
			if (a < FUNCS_MAX && a > declared)
				declared = a;
			continue;
		}
		if (sscanf(line, "f %lu %lx %lu %lu %n", &id, &a, &b, &c, &n) == 4 && n > 0) {
			/* Ids run below the functions the file declares (its
			 * "functions" and "module" lines). */
			if (id >= declared) {
				rc = ks_err_set(err, -EINVAL, "%s: function id %lu past the %zu functions "
						"it declares", name, id, declared);
				goto out;
			}
			if (id >= nnames) {
				char **v = realloc(names, (id + 1) * sizeof(*v));
				int64_t *w = v ? realloc(rows, (id + 1) * sizeof(*w)) : NULL;

				if (v)
					names = v;
				if (w)
					rows = w;
				if (!v || !w) {
					rc = ks_err_set(err, -ENOMEM, "out of memory");
					goto out;
				}
				memset(v + nnames, 0, (id + 1 - nnames) * sizeof(*v));
				for (size_t k = nnames; k <= id; k++)
					rows[k] = -1;
				nnames = id + 1;
			}
			free(names[id]);
			if (module[0]) {
				if (asprintf(&names[id], "%s:%s", module, line + n) < 0)
					names[id] = NULL;
			} else {
				names[id] = strdup(line + n);
			}
			if (!names[id]) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			if (r->db && db_proc >= 0) {
				const char *t[6] = { NULL, names[id], NULL, NULL, NULL, module };
				int64_t v[6] = { db_proc, 0, (int64_t)a, (int64_t)b, (int64_t)c, 0 };

				if ((rows[id] = ks_idb_put(r->db, IDB_FUNCTION, 6, v, t, err)) < 0) {
					rc = -EIO;
					goto out;
				}
			}
			continue;
		}
		if (sscanf(line, "thread %d overflow %lu unwound %lu open %lu lost %lu cpu %d", &tid,
			   &a, &b, &c, &lost, &cpu) >= 4) {
			struct table *v = realloc(r->threads, (r->nthreads + 1) * sizeof(*v));
			char (*tn)[48] = realloc(r->thread_names,
						 (r->nthreads + 1) * sizeof(*tn));
			struct edges *te = realloc(r->thread_edges,
						   (r->nthreads + 1) * sizeof(*te));

			if (v)
				r->threads = v;
			if (tn)
				r->thread_names = tn;
			if (te)
				r->thread_edges = te;
			if (!v || !tn || !te) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			memset(&r->threads[r->nthreads], 0, sizeof(*v));
			memset(&r->thread_edges[r->nthreads], 0, sizeof(*te));
			if (r->db && db_proc >= 0) {
				int64_t tv[6] = { db_proc, tid, (int64_t)a, (int64_t)b, (int64_t)c,
						  (int64_t)lost };

				if ((db_thread = ks_idb_put(r->db, IDB_THREAD, 6, tv, NULL, err)) < 0) {
					rc = -EIO;
					goto out;
				}
			}
			r->lost += lost;
			lost = 0;
			if (!cpu)
				r->nocpu++;
			thread = KS_NONE;
			if (r->trace_ready && proc != KS_NONE) {
				struct ks_pthread *th = ks_profile_push(&r->trace, threads);

				if (!th) {
					rc = ks_err_set(err, -ENOMEM, "out of memory");
					goto out;
				}
				th->process = proc;
				th->tid = tid;
				thread = (uint32_t)(r->trace.n_threads - 1);
			}
			snprintf(r->thread_names[r->nthreads], 48, "pid %d tid %d", pid, tid);
			cur = &r->threads[r->nthreads++];
			r->overflow += a;
			r->unwound += b;
			r->open += c;
			continue;
		}
		if (sscanf(line, "s %lu %lu %lu %lf %lf %lf %lf %lf %lf %lf", &id, &calls, &closed,
			   &incl, &excl, &sum, &mn, &mx, &ci, &cx) >= 8) {
			struct fstat_row *row;

			if (!cur || id >= nnames || !names[id]) {
				rc = ks_err_set(err, -EINVAL, "%s: counters of an unknown function", name);
				goto out;
			}
			row = table_get(cur, names[id]);
			if (!row || !table_get(&r->total, names[id])) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			table_add(row, calls, closed, incl, excl, sum, mn, mx, ci, cx);
			table_add(table_get(&r->total, names[id]), calls, closed, incl, excl, sum,
				  mn, mx, ci, cx);
			if (r->db && db_thread >= 0 && rows[id] >= 0) {
				/* IDB_NULL: the thread had no CPU clock. */
				int64_t v[11] = { db_thread, rows[id], (int64_t)calls, (int64_t)closed,
						  llround(incl), llround(excl), llround(sum),
						  llround(mn), llround(mx),
						  ci < 0 ? IDB_NULL : llround(ci),
						  cx < 0 ? IDB_NULL : llround(cx) };

				if (ks_idb_put(r->db, IDB_STAT, 11, v, NULL, err) < 0) {
					rc = -EIO;
					goto out;
				}
			}
			continue;
		}
		if (sscanf(line, "e %ld %lu %lu %lf", &caller, &id, &calls, &incl) == 4) {
			const char *from = caller == -1 ? "(not instrumented)"
					   : caller == -2 ? "(signal)"
					   : caller >= 0 && (size_t)caller < nnames ? names[caller]
					   : NULL;

			if (!cur || !from || id >= nnames || !names[id]) {
				rc = ks_err_set(err, -EINVAL, "%s: a call-graph edge of an unknown "
						"function", name);
				goto out;
			}
			if (edges_add(&r->thread_edges[r->nthreads - 1], from, names[id], calls,
				      incl) ||
			    edges_add(&r->total_edges, from, names[id], calls, incl)) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto out;
			}
			if (r->db && db_thread >= 0 && rows[id] >= 0) {
				const char *t[6] = { NULL, NULL, caller == -1 ? "not instrumented"
						     : caller == -2 ? "signal" : "function" };
				int64_t v[6] = { db_thread, caller >= 0 ? rows[caller] : IDB_NULL, 0,
						 rows[id], (int64_t)calls, llround(incl) };

				if (ks_idb_put(r->db, IDB_EDGE, 6, v, t, err) < 0) {
					rc = -EIO;
					goto out;
				}
			}
			continue;
		}
		if (sscanf(line, "trace %lu %lu", &a, &b) == 2) {
			r->untraced += b;
			if (r->db && db_thread >= 0) {
				int64_t v[3] = { db_thread, (int64_t)a, (int64_t)b };

				if (ks_idb_put(r->db, IDB_TRACE, 3, v, NULL, err) < 0) {
					rc = -EIO;
					goto out;
				}
			}
			continue;
		}
		if (!strcmp(line, "end"))
			ended = true;
	}
	if (!ended && r->nerrors < 4)
		snprintf(r->errors[r->nerrors++], sizeof(r->errors[0]),
			 "%s has no end line: the process was cut short while writing it", name);
out:
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	free(rows);
	free(line);
	fclose(f);
	return rc;
}

static void results_free(struct results *r)
{
	table_free(&r->total);
	edges_free(&r->total_edges);
	ks_profile_free(&r->trace);
	for (size_t i = 0; i < r->nthreads; i++) {
		table_free(&r->threads[i]);
		edges_free(&r->thread_edges[i]);
	}
	free(r->threads);
	free(r->thread_edges);
	free(r->thread_names);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every instr.<pid>.txt of the run directory, in name order. */
static int results_collect(struct ks_rundir *rd, struct results *r, struct ks_err *err)
{
	DIR *d;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int rc = 0, fd = dup(rd->dirfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return ks_err_set(err, -errno, "cannot list %s: %s", rd->path, strerror(errno));
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **v;

		if (strncmp(de->d_name, "instr.", 6) || len < 10 ||
		    strcmp(de->d_name + len - 4, ".txt"))
			continue;
		v = realloc(names, (n + 1) * sizeof(*v));
		if (!v || !(v[n] = strdup(de->d_name))) {
			free(v ? v : names);
			names = NULL;
			n = 0;
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		names = v;
		n++;
	}
	closedir(d);
	if (n)  /* qsort wants a pointer even for nothing */
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && !rc; i++)
		rc = results_read(r, rd->dirfd, names[i], err);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

/* trace.perfetto-trace and trace.json, when any call was traced. */
static int traces_write(struct ks_rundir *rd, const struct results *r, struct ks_err *err)
{
	int rc;

	if (!r->trace_ready || !r->traced)
		return 0;
	rc = ks_store_write_trace(rd, "trace.perfetto-trace", ks_trace_write_perfetto,
				  &r->trace, err);
	return rc ? rc : ks_store_write_trace(rd, "trace.json", ks_trace_write_json, &r->trace,
					      err);
}

static int report_write(struct ks_rundir *rd, const char *prog, struct results *r,
			struct ks_err *err)
{
	struct ks_outfile of;
	int rc = ks_outfile_open(rd, "report.txt", &of, err);

	if (rc)
		return rc;
	ks_outfile_printf(&of, "kscope instrument report\nprogram: %s\nprocesses: %zu, "
			  "threads: %zu\ntimes in nanoseconds; incl counts a recursive "
			  "function's outermost calls only; mean, min and max are per call "
			  "(inclusive)\n\ntotal\n", prog, r->nprocs, r->nthreads);
	ks_outfile_printf(&of, TABLE_HEAD, "", TABLE_COLS);
	table_write(&of, NULL, &r->total, "", SIZE_MAX);
	edges_merge(&r->total_edges);
	ks_outfile_printf(&of, "\ncall graph, total (incl: the inclusive time of the calls "
			  "along the edge whose callee was not already open)\n");
	edges_write(&of, &r->total_edges);
	if (r->lost)
		ks_outfile_printf(&of, "%" PRIu64 " calls are in no edge: a thread made more "
				  "distinct caller-callee pairs than its table holds\n", r->lost);
	for (size_t i = 0; i < r->nthreads; i++) {
		ks_outfile_printf(&of, "\nthread %s\n", r->thread_names[i]);
		ks_outfile_printf(&of, TABLE_HEAD, "", TABLE_COLS);
		table_write(&of, NULL, &r->threads[i], "", SIZE_MAX);
		edges_merge(&r->thread_edges[i]);
		ks_outfile_printf(&of, "\ncall graph, thread %s\n", r->thread_names[i]);
		edges_write(&of, &r->thread_edges[i]);
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

int ks_instr_counters_read(int dirfd, const char *name, struct ks_err *err)
{
	struct results r = { .rank = -1 };
	int rc;

	if ((rc = ks_profile_init(&r.trace, err)))
		return rc;
	r.trace_ready = true;
	rc = results_read(&r, dirfd, name, err);
	results_free(&r);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

/* kscope's environment less KSCOPE_INSTR_* and LD_PRELOAD, plus the
 * runtime's variables and the runtime first in LD_PRELOAD. */
static char **run_env(const struct instrument_opts *o, const char *lib, const char *dir,
		      char *owned[7])
{
	size_t n = 0, k = 0;
	const char *pre = getenv("LD_PRELOAD");
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 8, sizeof(*env));
	if (!env)
		return NULL;
	if (asprintf(&owned[0], "KSCOPE_INSTR_DIR=%s", dir) < 0 ||
	    asprintf(&owned[1], "KSCOPE_INSTR_MIN=%" PRId64, o->min_insns) < 0 ||
	    asprintf(&owned[2], "KSCOPE_INSTR_INCLUDE=%s", o->include ? o->include : "") < 0 ||
	    asprintf(&owned[3], "KSCOPE_INSTR_EXCLUDE=%s", o->exclude ? o->exclude : "") < 0 ||
	    asprintf(&owned[5], "KSCOPE_INSTR_TRACE_LIMIT=%" PRId64, o->trace_limit) < 0 ||
	    asprintf(&owned[6], "KSCOPE_INSTR_MODULES=%s", o->modules ? o->modules : "") < 0 ||
	    asprintf(&owned[4], "LD_PRELOAD=%s%s%s", lib, pre && *pre ? ":" : "",
		     pre ? pre : "") < 0) {
		free(env);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "KSCOPE_INSTR_", 13) || !strncmp(environ[i], "LD_PRELOAD=", 11))
			continue;
		env[k++] = environ[i];
	}
	for (int i = 0; i < 7; i++)
		env[k++] = owned[i];
	env[k] = NULL;
	return env;
}

/* --rewrite FILE: writes it, and says what it did. */
static int rewrite_run(const struct instrument_opts *o, const char *prog,
		       const struct ks_instr_image *img, const char *lib)
{
	char self[PATH_MAX], real[PATH_MAX], trace[32], top[32];
	char s_instr[] = "instrument", s_o[] = "-o", s_trace[] = "--trace-limit";
	char s_top[] = "--top", s_mod[] = "--modules";
	char *argv[12];
	size_t k = 0, n = 0;
	struct ks_err err;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	ks_err_clear(&err);
	if (len <= 0 || !realpath(lib, real)) {
		ks_error("cannot find kscope's own path: %s", strerror(errno));
		return KS_EXIT_FAIL;
	}
	self[len] = '\0';
	if (!access(o->rewrite, F_OK)) {
		ks_error("--rewrite %s: the file exists; kscope writes a new file (remove it, or "
			 "name another)", o->rewrite);
		return KS_EXIT_USAGE;
	}
	snprintf(trace, sizeof(trace), "%" PRId64, o->trace_limit);
	snprintf(top, sizeof(top), "%" PRId64, o->top);
	argv[k++] = self;
	argv[k++] = s_instr;
	argv[k++] = s_o;
	argv[k++] = o->output;
	argv[k++] = s_trace;
	argv[k++] = trace;
	argv[k++] = s_top;
	argv[k++] = top;
	if (o->modules) {
		argv[k++] = s_mod;
		argv[k++] = o->modules;
	}
	argv[k] = NULL;
	if (ks_instr_rewrite(prog, img, o->rewrite, real, argv, &n, &err)) {
		ks_error("%s", err.msg);
		return err.code == -EEXIST || err.code == -ENOSPC || err.code == -ENOEXEC
		       ? KS_EXIT_USAGE : KS_EXIT_FAIL;
	}
	ks_info("wrote %s: %s with %zu of %zu functions patched in the file (functions "
		"listed by kscope instrument --list -- %s); run, it runs itself under "
		"kscope instrument -o %s", o->rewrite, prog, n, img->nfuncs, o->rewrite,
		o->output);
	return KS_EXIT_OK;
}

/* --pid: Ctrl+C (or SIGTERM) detaches. */
static volatile sig_atomic_t attach_stop;

static void on_stop_signal(int sig)
{
	(void)sig;
	attach_stop = 1;
}

/* Attaches to o->pid, records until it ends, a signal or --duration,
 * and detaches.  The settings are the variables run_env made (env_vars,
 * LD_PRELOAD left out). */
static int attach_run(const struct instrument_opts *o, const char *lib, struct ks_rundir *rd,
		      char *const *env_vars, size_t nvars, uid_t uid, gid_t gid,
		      struct ks_err *err)
{
	struct sigaction sa = { .sa_handler = on_stop_signal }, old_int, old_term;
	struct ks_attach *a = NULL;
	char *block = NULL;
	size_t len = 0;
	int rc, ended;

	for (size_t i = 0; i < nvars; i++)
		len += strlen(env_vars[i]) + 1;
	if (!(block = malloc(len + 1)))
		return ks_err_set(err, -ENOMEM, "out of memory");
	len = 0;
	for (size_t i = 0; i < nvars; i++) {
		size_t n = strlen(env_vars[i]) + 1;

		memcpy(block + len, env_vars[i], n);
		len += n;
	}
	block[len++] = '\0';
	/* The process writes its results into the run directory itself. */
	if (geteuid() == 0 && uid != 0 && fchown(rd->dirfd, uid, gid) != 0) {
		free(block);
		return ks_err_set(err, -errno, "%s: cannot hand it to the process's user: %s",
				  rd->path, strerror(errno));
	}
	attach_stop = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	rc = ks_attach_start((pid_t)o->pid, lib, block, len, &a, err);
	free(block);
	if (rc)
		goto out;
	if (o->duration > 0)
		ks_info("attached to process %" PRId64 ": recording for %g s (Ctrl+C ends it "
			"sooner)", o->pid, o->duration);
	else
		ks_info("attached to process %" PRId64 ": recording until it ends, or Ctrl+C",
			o->pid);
	ended = ks_attach_wait(a, &attach_stop, o->duration);
	if (ended) {
		ks_info("process %" PRId64 " ended", o->pid);
	} else {
		rc = ks_attach_detach(a, err);
		if (rc == 1) {
			ks_info("process %" PRId64 " has run another program (exec) since kscope "
				"attached: the results are up to the exec; it runs on, untraced",
				o->pid);
			rc = 0;
		} else if (!rc) {
			ks_info("detached: process %" PRId64 " runs on, its code as it was",
				o->pid);
		}
	}
out:
	ks_attach_free(a);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return rc;
}

static int instrument_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct instrument_opts *o = p->opts;
	struct ks_instr_sel sel = { .min_insns = o->min_insns, .include = o->include,
				    .exclude = o->exclude };
	struct ks_instr_image img = { 0 };
	struct results res = { 0 };
	struct ks_rundir rd = { 0 };
	struct ks_outfile of;
	struct ks_err err;
	struct ks_idb db = { .f = { .fd = -1 } };
	struct ks_instr_rw rw = { 0 };
	uint8_t *rwbuf = NULL;
	size_t rwlen = 0;
	bool rewritten = false, pie = false;
	char lib[PATH_MAX], *prog = NULL, *owned[7] = { 0 }, **env = NULL;
	char dbpath[PATH_MAX + 16];
	bool have_rd = false;
	size_t npatch_mods = 0;
	pid_t pid = 0;
	uid_t uid = 0;
	gid_t gid = 0;
	int code = KS_EXIT_FAIL, status, rc;

	(void)cmd;
	ks_err_clear(&err);
	if (o->rewrite && (o->pid || o->list)) {
		ks_error("--rewrite writes a file and runs nothing: not with %s",
			 o->pid ? "--pid" : "--list");
		return KS_EXIT_USAGE;
	}
	if (o->pid && p->program) {
		ks_error("--pid %" PRId64 " and a program: give one (--pid attaches to a running "
			 "process, a program after -- is started)", o->pid);
		return KS_EXIT_USAGE;
	}
	if (!o->pid && o->duration > 0) {
		ks_error("--duration applies to --pid only (a program started by kscope is "
			 "recorded until it ends)");
		return KS_EXIT_USAGE;
	}
	if ((o->include && ks_instr_check_regex(o->include, "--include", &err)) ||
	    (o->exclude && ks_instr_check_regex(o->exclude, "--exclude", &err)) ||
	    (o->modules && ks_instr_check_regex(o->modules, "--modules", &err))) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	if (o->pid && (rc = ks_attach_check((pid_t)o->pid, &prog, &uid, &gid, &err))) {
		ks_error("%s", err.msg);
		code = rc == -ESRCH || rc == -EINVAL ? KS_EXIT_USAGE : KS_EXIT_FAIL;
		goto out;
	}
	if ((!o->pid && ks_find_program(p->program[0], &prog, &err)) ||
	    ks_check_dynamic(prog, "kscope instrument", "its runtime", &err)) {
		ks_error("%s", err.msg);
		code = KS_EXIT_USAGE;
		goto out;
	}
	/* A program rewritten by --rewrite: its functions are the ones its
	 * segment lists (the analysis would see the jumps). */
	rc = ks_instr_rw_read(prog, &rwbuf, &rwlen, &rw, &pie, &err);
	if (rc == 0) {
		rewritten = true;
		rc = ks_instr_rw_image(&rw, prog, pie, &img, &err);
	} else if (rc == -ENOENT) {
		rc = ks_instr_analyze(prog, &sel, &img, &err);
	}
	if (rc == -ENOEXEC) {
		ks_error("%s; kscope instrument patches the functions of an ELF program "
			 "(for a script, instrument the program it runs)", err.msg);
		code = KS_EXIT_USAGE;
		goto out;
	}
	if (rc) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (o->list) {
		list_write(stdout, &img, rewritten);
		if (o->modules && modules_write(stdout, prog, o->modules, &sel, &npatch_mods,
						&err)) {
			ks_error("%s", err.msg);
			goto out;
		}
		code = fflush(stdout) == 0 ? KS_EXIT_OK : KS_EXIT_FAIL;
		goto out;
	}
	if (ks_find_own_file(KS_INSTR_LIBNAME, R_OK, "kscope's runtime " KS_INSTR_LIBNAME, lib,
			     sizeof(lib), &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (rewritten) {
		char real[PATH_MAX];

		if (o->rewrite) {
			ks_error("%s is rewritten already; rewrite the original program", prog);
			code = KS_EXIT_USAGE;
			goto out;
		}
		if (!realpath(lib, real) || strcmp(real, rw.runtime)) {
			ks_error("%s was rewritten by another kscope (its runtime is %s; this "
				 "kscope's is %s): rewrite the original program again", prog,
				 rw.runtime, lib);
			code = KS_EXIT_USAGE;
			goto out;
		}
	}
	if (o->rewrite) {
		code = rewrite_run(o, prog, &img, lib);
		goto out;
	}
	res.rank = ks_mpi_rank();
	if (ks_mpi_rundir(o->output, "instrument", res.rank, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	have_rd = true;
	/* The verdicts, as --list prints them. */
	if (ks_outfile_open(&rd, "functions.txt", &of, &err) == 0) {
		char *buf = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&buf, &len);

		if (mf) {
			list_write(mf, &img, rewritten);
			if (o->modules)
				modules_write(mf, prog, o->modules, &sel, &npatch_mods, &err);
			fclose(mf);
			ks_outfile_write(&of, buf, len);
			free(buf);
		}
		if (ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &err)) {
			ks_error("%s", err.msg);
			goto out;
		}
	} else {
		ks_error("%s", err.msg);
		goto out;
	}
	if (!img.npatch && !npatch_mods)
		ks_warn("no function of %s can be instrumented (functions.txt says why): it runs, "
			"and nothing is recorded; a stripped program shows only the functions it "
			"exports (.dynsym)", prog);
	if (!(env = run_env(o, lib, rd.path, owned))) {
		ks_error("out of memory");
		goto out;
	}
	ks_info("instrument: %zu of %zu functions of %s instrumented%s (functions.txt); "
		"results in %s", img.npatch, img.nfuncs, prog,
		npatch_mods ? ", and functions of its libraries (--modules)" : "", rd.path);
	if (o->pid) {
		char *vars[6] = { owned[0], owned[1], owned[2], owned[3], owned[5], owned[6] };

		if (attach_run(o, lib, &rd, vars, 6, uid, gid, &err)) {
			ks_error("%s", err.msg);
			goto out;
		}
		code = KS_EXIT_OK;
	} else {
		status = ks_run_program(p->program, env, &pid, &err);
		if (status < 0) {
			ks_error("%s", err.msg);
			goto out;
		}
		code = ks_exit_status(status);
		if (WIFSIGNALED(status))
			ks_info("the program was ended by signal %d (%s)", WTERMSIG(status),
				strsignal(WTERMSIG(status)));
	}
	if (o->trace_limit > 0) {
		if (ks_profile_init(&res.trace, &err)) {
			ks_error("%s", err.msg);
			goto out;
		}
		res.trace_ready = true;
	}
	snprintf(dbpath, sizeof(dbpath), "%s/profile.db", rd.path);
	if (ks_idb_open(&db, dbpath, prog, &err)) {
		ks_error("%s", err.msg);
		code = KS_EXIT_FAIL;
		goto out;
	}
	res.db = &db;
	if (results_collect(&rd, &res, &err) || ks_idb_commit(&db, &err) ||
	    chmod(dbpath, KS_DELIVERABLE_MODE) != 0 ||
	    report_write(&rd, prog, &res, &err) || traces_write(&rd, &res, &err)) {
		ks_error("%s", err.msg);
		code = KS_EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < res.nerrors; i++)
		ks_warn("the runtime could not instrument: %s", res.errors[i]);
	for (size_t i = 0; i < res.nlate; i++)
		ks_warn("left alone at run time: %s", res.late[i]);
	for (size_t i = 0; i < res.nmodnotes; i++)
		ks_warn("library left alone (--modules): %s", res.modnotes[i]);
	if (res.nocpu)
		ks_warn("no CPU time for %zu of %zu threads (their functions' CPU columns show "
			"'-'): %s", res.nocpu, res.nthreads,
			res.cpunote[0] ? res.cpunote : "the runtime could not open a CPU clock");
	if (!res.nprocs)
		ks_warn("no process wrote results: was LD_PRELOAD dropped, or did the program "
			"end with _exit() or a signal?");
	if (res.unwound)
		ks_info("%" PRIu64 " calls were left without returning (longjmp, or a thread or "
			"process ended inside them); each was closed when that was seen",
			res.unwound);
	if (res.untraced)
		ks_info("the traces hold the first %" PRId64 " calls of each thread: %" PRIu64
			" calls in all, %" PRIu64 " more are in the counts only (--trace-limit)",
			o->trace_limit, res.traced, res.untraced);
	if (res.overflow)
		ks_warn("%" PRIu64 " calls were counted but not timed: deeper than the shadow "
			"stack (%u frames)", res.overflow, 1u << 16);
	if (o->top > 0 && res.total.n) {
		fprintf(stderr, "kscope: top functions by inclusive time (ns), %zu processes, "
			"%zu threads:\n", res.nprocs, res.nthreads);
		fprintf(stderr, TABLE_HEAD, "  ", TABLE_COLS);
		table_write(NULL, stderr, &res.total, "  ", (size_t)o->top);
	}
	ks_info("report: %s/report.txt", rd.path);
out:
	ks_idb_close(&db);
	if (have_rd)
		ks_rundir_close(&rd);
	for (int i = 0; i < 7; i++)
		free(owned[i]);
	free(env);
	results_free(&res);
	ks_instr_image_free(&img);
	if (rwbuf)
		munmap(rwbuf, rwlen);
	free(prog);
	return code;
}

const struct ks_cmd ks_cmd_instrument = {
	.name = "instrument",
	.summary = "count and time every call of a program's functions",
	.usage = "[options] -- PROGRAM [ARGS...]",
	.description =
		"Runs PROGRAM (an unmodified, dynamically linked x86-64 ELF program)\n"
		"with kscope's runtime preloaded, which before main patches the entry of\n"
		"each of the program's functions that can be patched safely with a jump\n"
		"to a trampoline, and records every call and return: exact calls,\n"
		"inclusive and exclusive wall and CPU time, min/mean/max per call, per\n"
		"thread.\n"
		"Writes functions.txt (each function's verdict), instr.<pid>.txt (the\n"
		"raw counters of each process) and report.txt to\n"
		"<output>/instrument_<YYYYmmdd_HHMMSS>_<pid>/ and prints the top\n"
		"functions on stderr.  --list prints the verdicts and runs nothing.\n"
		"--pid PID attaches to a running process instead, and detaches when it\n"
		"ends, on Ctrl+C or after --duration, leaving its code as it was.\n"
		"--rewrite FILE writes a copy of PROGRAM with its functions patched in\n"
		"the file, which runs itself under kscope instrument.\n"
		"Exits with the program's status.  See docs/instrument.md.",
	.args = {
		.opts = instrument_opts,
		.opts_size = sizeof(struct instrument_opts),
		.takes_program = true,
	},
	.run = instrument_run,
};
