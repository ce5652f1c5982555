/*
 * view_import.c: kscope view's import -- what PATH is, the walk of a run
 * directory, and one card per directory that holds something to show.
 *
 * PATH may be a directory (a run directory of any kscope command, or a
 * directory above several), a visualize_data.bin, a Chrome trace JSON, a
 * Perfetto trace kscope wrote, a profile.db or a memory tool's
 * report.json.  No symbolic link is
 * followed: not in PATH (every component is checked), not in the walk
 * (links are skipped), not when a file is opened (O_NOFOLLOW).
 *
 * A directory's files make one card: its visualize_data.bin (blocks),
 * trace.json (the timeline, unless the container has a 0x02 block, which
 * is the same trace), profile.db (the profile and a timeline of its
 * samples; a sample run's trace.json then adds nothing the profile lacks
 * and is not read), trace.perfetto-trace (without a profile.db: the
 * timeline of its slices and the profile of its samples, and then a
 * trace.json is not read either), report.json (findings), Pipe_statistic.csv with
 * Instruction_statistic.csv (a prediction), causal.csv (a causal profile's
 * curves) and an op launch's kernel.cl.
 * So an op launch is one card with its timing passes, details and
 * roofline, a predict run one card with its pipe timeline and
 * statistics, and a causal run one card with its curves.  Reading the
 * files is view_import_read.c's job.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "profile.h"
#include "readfile.h"
#include "view_import_int.h"

/* How deep the walk goes below PATH: an output directory (1), a run
 * directory (2), kscope op's <pid>/<kernel>_<index>/ (3 and 4). */
#define KV_MAX_DEPTH 4

/* What kscope view accepts, for messages. */
#define KV_ACCEPTS "kscope view accepts a run directory of a kscope command, a " \
	"visualize_data.bin, a Chrome trace JSON (an object with \"traceEvents\" or " \
	"an array of events), a Perfetto trace written by kscope (.perfetto-trace), " \
	"a profile.db or a memory tool's report.json"
#define KV_LOOKS_FOR "visualize_data.bin, trace.json, trace.perfetto-trace, " \
	"profile.db, report.json (of " \
	"kscope memcheck, contention or falseshare), Pipe_statistic.csv with " \
	"Instruction_statistic.csv (of kscope predict), causal.csv (of kscope causal)"

/* Run directory name prefixes, "<command>_<time>_<pid>". */
static const char *const commands[] = {
	"op", "simulate", "predict", "sample", "memcheck", "contention", "falseshare",
	"merge", "tune", "calibrate", "pack", "causal", NULL,
};

void kv_progress(struct kv_import *im, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!im->progress)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	im->progress(line);
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir);
	char *p = malloc(n + strlen(name) + 2);

	if (p)
		sprintf(p, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
	return p;
}

static void dirfiles_free(struct kv_dirfiles *df)
{
	free(df->vizbin);
	free(df->trace);
	free(df->perfetto);
	free(df->profile);
	free(df->report);
	free(df->pipes);
	free(df->instructions);
	free(df->causal);
	free(df->kernel_source);
	memset(df, 0, sizeof *df);
}

/* ------------------------------------------------------------------ */
/* PATH                                                                */
/* ------------------------------------------------------------------ */

/* Every component of path, as given, must exist and none may be a
 * symbolic link. */
static int check_components(const char *path, struct ks_err *err)
{
	size_t n = strlen(path);
	char *buf = malloc(n + 1);
	struct stat st;
	int rc = 0;

	if (!buf)
		return ks_err_set(err, -ENOMEM, "%s: out of memory", path);
	for (size_t i = 1; i <= n; i++) {
		if (i < n && path[i] != '/')
			continue;
		if (path[i - 1] == '/')
			continue;
		memcpy(buf, path, i);
		buf[i] = '\0';
		if (lstat(buf, &st) < 0) {
			rc = -errno;
			ks_err_set(err, rc, "%s: %s%s%s", path, i < n ? buf : "",
				   i < n ? ": " : "", strerror(errno));
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			rc = -ELOOP;
			ks_err_set(err, rc, "%s: '%s' is a symbolic link; kscope view does not "
				   "follow symbolic links: give the path it points to", path, buf);
			break;
		}
	}
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Cards                                                               */
/* ------------------------------------------------------------------ */

static bool is_command_name(const char *name, const char **cmd)
{
	for (size_t i = 0; commands[i]; i++) {
		size_t n = strlen(commands[i]);

		if (strncmp(name, commands[i], n) == 0 && (name[n] == '_' || !name[n])) {
			*cmd = commands[i];
			return true;
		}
	}
	return false;
}

/* The card's id and command from the nearest component of dir named like
 * a run directory: "op" and "op/1234/vadd_0" for .../op_<time>_<pid>/
 * 1234/vadd_0.  *id is malloc'd; *command points into commands[] or is
 * "" when no component is so named (the files will say). */
static int name_card(const char *dir, const char *fallback, char **id,
		     const char **command)
{
	char *copy = strdup(dir), *comp[256];
	size_t ncomp = 0;
	const char *cmd = NULL;
	size_t at = 0;

	*id = NULL;
	*command = "";
	if (!copy)
		return -ENOMEM;
	for (char *save = NULL, *t = strtok_r(copy, "/", &save); t && ncomp < 256;
	     t = strtok_r(NULL, "/", &save))
		if (strcmp(t, ".") != 0)
			comp[ncomp++] = t;
	for (size_t i = ncomp; i-- > 0;) {
		if (is_command_name(comp[i], &cmd)) {
			at = i;
			break;
		}
	}
	if (cmd) {
		size_t len = strlen(cmd) + 1;

		for (size_t i = at + 1; i < ncomp; i++)
			len += strlen(comp[i]) + 1;
		*id = malloc(len);
		if (*id) {
			strcpy(*id, cmd);
			for (size_t i = at + 1; i < ncomp; i++) {
				strcat(*id, "/");
				strcat(*id, comp[i]);
			}
		}
		*command = cmd;
	} else {
		*id = strdup(fallback ? fallback : ncomp ? comp[ncomp - 1] : "data");
	}
	free(copy);
	return *id ? 0 : -ENOMEM;
}

static struct kv_card *new_card(struct kv_import *im)
{
	struct ks_view *v = im->v;

	if (v->ncards == im->cap_cards) {
		size_t cap = im->cap_cards ? 2 * im->cap_cards : 8;
		struct kv_card *c = realloc(v->cards, cap * sizeof *c);

		if (!c)
			return NULL;
		v->cards = c;
		im->cap_cards = cap;
	}
	memset(&v->cards[v->ncards], 0, sizeof v->cards[0]);
	return &v->cards[v->ncards++];
}

/* One card from the files of one directory (or PATH itself). */
static int make_card(struct kv_import *im, const char *where, const char *fallback_id,
		     const struct kv_dirfiles *df)
{
	struct kv_card *c = new_card(im);
	const char *cmd;
	int rc;

	if (!c)
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", where);
	rc = name_card(where, fallback_id, &c->id, &cmd);
	c->command = xstrdup(cmd);
	c->path = xstrdup(where);
	if (rc < 0 || !c->command || !c->path)
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", where);
	rc = kv_card_fill(im, c, df);
	if (rc == 0 && c->kinds == 0) {
		/* e.g. a report.json of another program: no card */
		kv_card_clear(c);
		im->v->ncards--;
	}
	return rc;
}

/* *s made valid UTF-8 in place of itself (ks_utf8_fix: "caf\xe9"
 * becomes "café"). */
static int repair(char **s)
{
	char *fixed;

	if (ks_utf8_valid(*s, strlen(*s)))
		return 0;
	fixed = ks_utf8_fix(*s, strlen(*s), NULL);
	if (!fixed)
		return -ENOMEM;
	free(*s);
	*s = fixed;
	return 0;
}

/* A card's id, title and path are made of directory and file names,
 * which need not be UTF-8; the page gets them as JSON text (and sends the
 * id back), so they are stored repaired, once. */
static int repair_names(struct ks_view *v)
{
	for (size_t i = 0; i < v->ncards; i++)
		if (repair(&v->cards[i].id) < 0 || repair(&v->cards[i].title) < 0 ||
		    repair(&v->cards[i].path) < 0)
			return -ENOMEM;
	return 0;
}

/* Makes ids unique: a card whose id another card also has is named by
 * its path instead, and "#N" is added if even that repeats (two PATHs
 * cannot name one directory, but an id may equal another's path). */
static int unique_ids(struct ks_view *v)
{
	/* Every card to rename is found before any is renamed: renaming as
	 * they are found would hide the repeats of an id already renamed. */
	bool *dup = calloc(v->ncards ? v->ncards : 1, sizeof *dup);
	int rc = 0;

	if (!dup)
		return -ENOMEM;
	for (size_t i = 0; i < v->ncards; i++)
		for (size_t j = i + 1; j < v->ncards; j++)
			if (strcmp(v->cards[i].id, v->cards[j].id) == 0)
				dup[i] = dup[j] = true;
	for (size_t i = 0; i < v->ncards; i++) {
		char *id;

		if (!dup[i])
			continue;
		id = strdup(v->cards[i].path);
		if (!id) {
			rc = -ENOMEM;
			goto out;
		}
		free(v->cards[i].id);
		v->cards[i].id = id;
	}
	for (size_t i = 0; i < v->ncards; i++) {
		unsigned n = 1;

		for (size_t j = i + 1; j < v->ncards; j++) {
			if (strcmp(v->cards[i].id, v->cards[j].id) != 0)
				continue;
			char *id = malloc(strlen(v->cards[j].id) + 16);

			if (!id) {
				rc = -ENOMEM;
				goto out;
			}
			sprintf(id, "%s#%u", v->cards[j].id, ++n);
			free(v->cards[j].id);
			v->cards[j].id = id;
		}
	}
out:
	free(dup);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The directory walk                                                  */
/* ------------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sets *slot to dir/name unless set. */
static int take(char **slot, const char *dir, const char *name)
{
	if (*slot)
		return 0;
	*slot = join(dir, name);
	return *slot ? 0 : -ENOMEM;
}

static int walk(struct kv_import *im, const char *dir, int depth)
{
	struct kv_dirfiles df = { 0 };
	char **subdirs = NULL;
	size_t nsub = 0, capsub = 0;
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* PATH itself must be readable; below it, an unreadable
		 * directory is one kscope view cannot show, not an error. */
		if (depth == 0)
			return ks_err_set(im->err, -errno, "%s: cannot open the directory: %s",
					  dir, strerror(errno));
		return 0;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", dir);
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		struct stat st;

		if (n[0] == '.')
			continue; /* ".", "..", and kscope's unfinished .NAME.part */
		if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth + 1 > KV_MAX_DEPTH)
				continue;
			if (nsub == capsub) {
				size_t cap = capsub ? 2 * capsub : 16;
				char **s = realloc(subdirs, cap * sizeof *s);

				if (!s) {
					rc = -ENOMEM;
					break;
				}
				subdirs = s;
				capsub = cap;
			}
			if (!(subdirs[nsub] = join(dir, n))) {
				rc = -ENOMEM;
				break;
			}
			nsub++;
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (strcmp(n, "visualize_data.bin") == 0)
			rc = take(&df.vizbin, dir, n);
		else if (strcmp(n, "trace.json") == 0)
			rc = take(&df.trace, dir, n);
		else if (strcmp(n, "trace.perfetto-trace") == 0)
			rc = take(&df.perfetto, dir, n);
		else if (strcmp(n, "profile.db") == 0)
			rc = take(&df.profile, dir, n);
		else if (strcmp(n, "report.json") == 0)
			rc = take(&df.report, dir, n);
		else if (strcmp(n, "Pipe_statistic.csv") == 0)
			rc = take(&df.pipes, dir, n);
		else if (strcmp(n, "Instruction_statistic.csv") == 0)
			rc = take(&df.instructions, dir, n);
		else if (strcmp(n, "causal.csv") == 0)
			rc = take(&df.causal, dir, n);
		else if (strcmp(n, "kernel.cl") == 0)
			rc = take(&df.kernel_source, dir, n);
		if (rc < 0)
			break;
	}
	closedir(d);
	if (rc < 0) {
		ks_err_set(im->err, rc, "%s: out of memory", dir);
		goto out;
	}
	if (df.causal && df.profile) {
		/* a kscope causal run's profile.db holds its experiments and
		 * curves as tables of its own, not samples: causal.csv has
		 * what the page shows */
		free(df.profile);
		df.profile = NULL;
	}
	if (!(df.pipes && df.instructions)) {
		/* one without the other is not a prediction kscope wrote */
		free(df.pipes);
		free(df.instructions);
		df.pipes = df.instructions = NULL;
	}
	if (df.vizbin || df.trace || df.perfetto || df.profile || df.report || df.pipes ||
	    df.causal) {
		rc = make_card(im, dir, NULL, &df);
		if (rc < 0)
			goto out;
	}
	if (nsub > 1)
		qsort(subdirs, nsub, sizeof *subdirs, cmp_names);
	for (size_t i = 0; i < nsub && rc == 0; i++)
		rc = walk(im, subdirs[i], depth + 1);
out:
	for (size_t i = 0; i < nsub; i++)
		free(subdirs[i]);
	free(subdirs);
	dirfiles_free(&df);
	return rc;
}

/* ------------------------------------------------------------------ */
/* PATH as a file                                                      */
/* ------------------------------------------------------------------ */

/* What a file that kscope view cannot show looks like, for the message. */
static void describe(const unsigned char *b, size_t n, uint64_t size, char *out,
		     size_t outsz)
{
	size_t text = 0;

	if (size == 0) {
		snprintf(out, outsz, "an empty file");
		return;
	}
	if (n >= 4 && memcmp(b, "\177ELF", 4) == 0) {
		snprintf(out, outsz, "an ELF executable or library");
		return;
	}
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		snprintf(out, outsz, "a gzip archive");
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (b[i] == '\n' || b[i] == '\t' || b[i] == '\r' || (b[i] >= 0x20 && b[i] != 0x7f))
			text++;
	if (text == n) {
		size_t i = 0;

		while (i < n && isspace(b[i]))
			i++;
		if (i < n && b[i] == '{')
			snprintf(out, outsz, "JSON that is neither a Trace Event document (no "
				 "\"traceEvents\" array) nor a memory tool's report");
		else
			snprintf(out, outsz, "a text file");
		return;
	}
	snprintf(out, outsz, "a binary file of %llu bytes that is not a "
		 "visualize_data.bin (its 12th byte is not 0x5a)", (unsigned long long)size);
}

/* A name Perfetto traces are given: trace.perfetto-trace, *.pftrace. */
static bool perfetto_name(const char *path)
{
	size_t n = strlen(path);

	return (n >= 15 && strcmp(path + n - 15, ".perfetto-trace") == 0) ||
	       (n >= 8 && strcmp(path + n - 8, ".pftrace") == 0);
}

/* The start of a Trace: field 1 (a packet) whose length varint fits and
 * whose first field inside is a tag kscope writes in a packet (8, 10, 11,
 * 12, 13, 60, 66).  Only a hint for files not named like a trace. */
static bool looks_protobuf(const unsigned char *b, size_t n)
{
	size_t i = 1;
	uint64_t len = 0, tag = 0;
	int shift = 0;

	while (i < n && shift < 35) {
		len |= (uint64_t)(b[i] & 0x7f) << shift;
		shift += 7;
		if (!(b[i++] & 0x80))
			break;
	}
	if (i >= n || len < 2)
		return false;
	for (shift = 0; i < n && shift < 35; shift += 7) {
		tag |= (uint64_t)(b[i] & 0x7f) << shift;
		if (!(b[i++] & 0x80))
			break;
	}
	switch (tag) {
	case 8 << 3 | 0: case 10 << 3 | 0: case 11 << 3 | 2: case 12 << 3 | 2:
	case 13 << 3 | 0: case 60 << 3 | 2: case 66 << 3 | 2:
		return true;
	default:
		return false;
	}
}

static int import_file(struct kv_import *im, const char *path, const struct stat *st)
{
	struct kv_dirfiles df = { 0 };
	unsigned char head[4096];
	char what[256];
	const char *slash, *fallback;
	ssize_t n;
	int fd, rc;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ks_err_set(im->err, -errno, "%s: cannot open: %s", path, strerror(errno));
	n = pread(fd, head, sizeof head, 0);
	close(fd);
	if (n < 0)
		return ks_err_set(im->err, -errno, "%s: cannot read: %s", path, strerror(errno));

	slash = strrchr(path, '/');
	fallback = NULL;
	if (n >= 16 && memcmp(head, "SQLite format 3", 16) == 0) {
		df.profile = strdup(path);
		fallback = "sample";
	} else if (perfetto_name(path) || (n >= 2 && head[0] == 0x0a && (n < 12 || head[11] != 0x5a) &&
					  looks_protobuf(head, (size_t)n))) {
		/* Perfetto by its name, or a Trace's first packet (field 1,
		 * length-delimited) that is not a container (whose 12th byte
		 * is 0x5a); its reader says what else is wrong */
		df.perfetto = strdup(path);
		fallback = "sample";
	} else if (n >= 12 && head[11] == 0x5a) {
		/* a container (perhaps a damaged one: its reader will say) */
		df.vizbin = strdup(path);
		fallback = "visualize_data";
	} else {
		size_t i = 0;

		while (i < (size_t)n && isspace(head[i]))
			i++;
		if (i < (size_t)n && head[i] == '[') {
			df.trace = strdup(path);
			fallback = "trace";
		} else if (i < (size_t)n && head[i] == '{' &&
			   memmem(head, (size_t)n, "\"kscope-memtools-report\"", 24)) {
			df.report = strdup(path);
			fallback = "findings";
		} else if (i < (size_t)n && head[i] == '{') {
			/* "traceEvents" may come after a large "otherData": look
			 * at the whole file only when the start does not say */
			char *text = NULL;
			size_t size = 0;
			struct ks_err e;

			if (memmem(head, (size_t)n, "\"traceEvents\"", 13) ||
			    (ks_read_file_at(AT_FDCWD, path, O_NOFOLLOW, KV_MAX_TEXT_FILE, &text,
					     &size, &e) == 0 &&
			     memmem(text, size, "\"traceEvents\"", 13))) {
				df.trace = strdup(path);
				fallback = "trace";
			}
			free(text);
		}
	}
	if (!fallback) {
		describe(head, (size_t)n, (uint64_t)st->st_size, what, sizeof what);
		return ks_err_set(im->err, -EINVAL, "%s: kscope view cannot show this file: "
				  "it looks like %s; %s", path, what, KV_ACCEPTS);
	}
	if (!df.vizbin && !df.trace && !df.perfetto && !df.profile && !df.report)
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
	{
		/* the directory the file is in names the card when it is a
		 * run directory: .../op_<time>_<pid>/1234/vadd_0/visualize_data.bin */
		char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");

		if (!dir) {
			dirfiles_free(&df);
			return ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
		}
		rc = make_card(im, dir, fallback, &df);
		if (rc == 0 && im->v->ncards == 0) {
			rc = ks_err_set(im->err, -EINVAL, "%s: nothing kscope view can show in "
					"this file: %s", path, df.report ? "the report is not "
					"a memory tool's" : df.perfetto ? "the trace has no "
					"tracks" : "it holds no source, timeline, "
					"hot-spot, details or roofline data");
		} else if (rc == 0) {
			/* the card is the file, not its directory */
			struct kv_card *c = &im->v->cards[im->v->ncards - 1];
			char *p = strdup(path);

			if (!p)
				rc = ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
			else {
				free(c->path);
				c->path = p;
			}
		}
		free(dir);
	}
	dirfiles_free(&df);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                        */
/* ------------------------------------------------------------------ */

/* The directories sources are read from: PATH's (PATH itself when it is
 * a directory) and opts' source directories, resolved. */
static int source_roots(struct kv_import *im, const char *path, bool is_dir,
			const struct ks_view_import_opts *opts)
{
	size_t n = 1 + (opts ? opts->nsource_dirs : 0);
	char *dir = is_dir ? strdup(path) : NULL;

	if (!is_dir) {
		const char *slash = strrchr(path, '/');

		dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
			    : strdup(".");
	}
	im->roots = calloc(n, sizeof *im->roots);
	if (!dir || !im->roots) {
		free(dir);
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
	}
	for (size_t i = 0; i < n; i++) {
		const char *d = i == 0 ? dir : opts->source_dirs[i - 1];
		char *real = realpath(d, NULL);

		if (!real) {
			int rc = -errno;

			free(dir);
			return ks_err_set(im->err, rc, "%s: %s", d, strerror(-rc));
		}
		im->roots[im->nroots++] = real;
	}
	free(dir);
	return 0;
}

static void roots_free(struct kv_import *im)
{
	for (size_t i = 0; i < im->nroots; i++)
		free(im->roots[i]);
	free(im->roots);
	im->roots = NULL;
	im->nroots = 0;
}

int ks_view_import(const char *path, const struct ks_view_import_opts *opts,
		   struct ks_view **out, void (*progress)(const char *line),
		   struct ks_err *err)
{
	struct kv_import im = { .progress = progress, .err = err };
	struct timespec t0, t1;
	struct stat st;
	int rc;

	*out = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!path || !*path)
		return ks_err_set(err, -EINVAL, "no PATH given; %s", KV_ACCEPTS);
	rc = check_components(path, err);
	if (rc < 0)
		return rc;
	if (stat(path, &st) < 0)
		return ks_err_set(err, -errno, "%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return ks_err_set(err, -EINVAL, "%s: not a regular file or a directory; %s",
				  path, KV_ACCEPTS);

	rc = source_roots(&im, path, S_ISDIR(st.st_mode), opts);
	if (rc < 0) {
		roots_free(&im);
		return rc;
	}
	im.v = calloc(1, sizeof *im.v);
	if (!im.v || !(im.v->path = strdup(path))) {
		free(im.v);
		roots_free(&im);
		return ks_err_set(err, -ENOMEM, "%s: out of memory", path);
	}
	if (S_ISDIR(st.st_mode)) {
		kv_progress(&im, "looking for results in %s", path);
		rc = walk(&im, path, 0);
		if (rc == 0 && im.v->ncards == 0)
			rc = ks_err_set(err, -ENOENT, "%s: nothing kscope view can show here: "
					"it looks (%d directory levels deep at most, not following "
					"symbolic links) for %s", path, KV_MAX_DEPTH, KV_LOOKS_FOR);
	} else {
		rc = import_file(&im, path, &st);
	}
	if (rc == 0 && (repair_names(im.v) < 0 || unique_ids(im.v) < 0))
		rc = ks_err_set(err, -ENOMEM, "%s: out of memory", path);
	roots_free(&im);
	if (rc < 0) {
		ks_view_free(im.v);
		return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	im.v->import_seconds = (double)(t1.tv_sec - t0.tv_sec) +
			       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	kv_progress(&im, "%zu card%s read in %.2f s", im.v->ncards,
		    im.v->ncards == 1 ? "" : "s", im.v->import_seconds);
	*out = im.v;
	return 0;
}

void kv_card_clear(struct kv_card *c)
{
	free(c->id);
	free(c->title);
	free(c->path);
	free(c->command);
	if (c->tl)
		kv_tl_free(c->tl);
	for (size_t i = 0; i < 16; i++)
		json_decref(c->block[i]);
	for (size_t i = 0; i < c->nsources; i++) {
		free(c->sources[i].path);
		free(c->sources[i].name);
		free(c->sources[i].text);
	}
	free(c->sources);
	for (size_t i = 0; i < c->nrefused; i++) {
		free(c->refused[i].path);
		free(c->refused[i].why);
	}
	free(c->refused);
	if (c->profile) {
		ks_profile_free(c->profile);
		free(c->profile);
	}
	json_decref(c->findings);
	json_decref(c->predict);
	json_decref(c->causal);
	memset(c, 0, sizeof *c);
}

void ks_view_free(struct ks_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->ncards; i++)
		kv_card_clear(&v->cards[i]);
	free(v->cards);
	free(v->path);
	free(v);
}
