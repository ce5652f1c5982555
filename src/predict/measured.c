/*
 * --measured: the times a prediction is compared with.  Either a kscope op
 * result (a launch's directory, or its Timing.csv: the median of the
 * measured passes is the kernel's time), a CSV of per-pipe times with
 * the columns "Pipe,Time (us)" (a row "total" gives the kernel's time),
 * or an msprof export with per-pipe columns: op_summary_*.csv or msprof
 * op's PipeUtilization.csv (docs/predict.md, "Measured times from
 * msprof").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pred_int.h"
#include "readfile.h"

#define MEASURED_MAX_BYTES (64u << 20)
#define MAX_PASSES 100000

/* Splits one CSV line (no quoted commas in these files) into fields. */
static int split_line(char *line, char **f, int max)
{
	int n = 0;

	for (char *p = line;; p++) {
		if (n == max)
			return n;
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p = '\0';
	}
	return n;
}

static int col_of(char **f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcasecmp(f[i], name) == 0)
			return i;
	return -1;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static bool num(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return end != s && *end == '\0' && errno == 0 && isfinite(*out) && *out >= 0;
}

static int read_timing(const char *path, char *text, struct pred_measured *o,
		       struct ks_err *err)
{
	char *save = NULL, *line, *f[64];
	int n, ckind, cdur, lineno = 1;
	double *v = malloc(MAX_PASSES * sizeof(double));
	size_t nv = 0;

	if (!v)
		return ks_err_set(err, -ENOMEM, "out of memory");
	line = strtok_r(text, "\r\n", &save);
	n = line ? split_line(line, f, 64) : 0;
	ckind = col_of(f, n, "kind");
	cdur = col_of(f, n, "duration_us");
	if (ckind < 0 || cdur < 0) {
		free(v);
		return ks_err_set(err, -EINVAL, "--measured %s: a kscope op Timing.csv has the "
				  "columns kind and duration_us; this header has %s", path,
				  ckind < 0 ? "no kind" : "no duration_us");
	}
	while ((line = strtok_r(NULL, "\r\n", &save)) && nv < MAX_PASSES) {
		double d;

		lineno++;
		n = split_line(line, f, 64);
		if (n <= ckind || n <= cdur || strcmp(f[ckind], "measured"))
			continue;
		if (!num(f[cdur], &d)) {
			free(v);
			return ks_err_set(err, -EINVAL, "--measured %s: line %d: duration_us "
					  "\"%.40s\" is not a time", path, lineno, f[cdur]);
		}
		v[nv++] = d;
	}
	if (nv == 0) {
		free(v);
		return ks_err_set(err, -EINVAL, "--measured %s: no measured pass in it",
				  path);
	}
	qsort(v, nv, sizeof(double), dbl_cmp);
	o->total_us = nv % 2 ? v[nv / 2] : (v[nv / 2 - 1] + v[nv / 2]) / 2;
	free(v);
	return 0;
}

/* ------------------------------------------------------------------ */
/* msprof's op_summary and PipeUtilization                             */
/* ------------------------------------------------------------------ */

#define MSPROF_MAX_COLS 512

/* Splits one CSV line into fields, double quotes protecting commas (msprof
 * quotes its shape lists); the quotes are removed in place. */
static int split_quoted(char *line, char **f, int max)
{
	int n = 0;
	char *w = line, *p = line;

	while (n < max) {
		bool q = false;

		f[n++] = w;
		for (; *p && (q || *p != ','); p++) {
			if (*p == '"') {
				if (q && p[1] == '"')
					*w++ = *p++;
				else
					q = !q;
				continue;
			}
			*w++ = *p;
		}
		if (!*p) {
			*w = '\0';
			break;
		}
		*w++ = '\0';
		p++;
	}
	return n;
}

/* What a column is: a time (us) or a ratio of the core's time, on a pipe. */
struct ms_col {
	int col;
	int pipe;        /* into ms_units */
	int core;        /* 0 none, 1 aic, 2 aiv */
	bool ratio;
};

static const struct {
	const char *unit, *pipe;
} ms_units[] = {
	{ "mac", "CUBE" }, { "cube", "CUBE" }, { "vec", "VECTOR" },
	{ "scalar", "SCALAR" }, { "mte1", "MTE1" }, { "mte2", "MTE2" },
	{ "mte3", "MTE3" }, { "fixpipe", "FIXP" },
};
#define MS_NUNITS (sizeof(ms_units) / sizeof(ms_units[0]))
#define MS_NPIPES 7  /* distinct pipe names above */

static int ms_pipe_index(const char *pipe)
{
	static const char *const pipes[MS_NPIPES] = {
		"CUBE", "VECTOR", "SCALAR", "MTE1", "MTE2", "MTE3", "FIXP",
	};

	for (int i = 0; i < MS_NPIPES; i++)
		if (strcmp(pipes[i], pipe) == 0)
			return i;
	return -1;
}

/* Reads "[aic_|aiv_]UNIT_time(us)" or "[aic_|aiv_]UNIT_ratio". */
static bool ms_parse_col(const char *h, struct ms_col *c)
{
	char unit[32];
	size_t n;

	c->core = 0;
	if (strncasecmp(h, "aic_", 4) == 0) {
		c->core = 1;
		h += 4;
	} else if (strncasecmp(h, "aiv_", 4) == 0) {
		c->core = 2;
		h += 4;
	}
	n = strlen(h);
	if (n > 9 && strcasecmp(h + n - 9, "_time(us)") == 0) {
		c->ratio = false;
		n -= 9;
	} else if (n > 6 && strcasecmp(h + n - 6, "_ratio") == 0) {
		c->ratio = true;
		n -= 6;
	} else {
		return false;
	}
	if (n == 0 || n >= sizeof(unit))
		return false;
	memcpy(unit, h, n);
	unit[n] = '\0';
	for (size_t i = 0; i < MS_NUNITS; i++)
		if (strcasecmp(unit, ms_units[i].unit) == 0) {
			c->pipe = ms_pipe_index(ms_units[i].pipe);
			return true;
		}
	return false;
}

/* A measured number: "N/A", "" and other text mean none. */
static bool ms_num(const char *s, double *out)
{
	while (*s == ' ')
		s++;
	return num(s, out);
}

static const char ms_expected[] =
	"per-pipe columns: aic_mac_ratio or aic_cube_ratio, aiv_vec_ratio, "
	"aic_scalar_ratio, aiv_scalar_ratio, aic_mte1_ratio, aic_mte2_ratio, "
	"aiv_mte2_ratio, aiv_mte3_ratio, aic_fixpipe_ratio (or the same names "
	"with _time(us) for _ratio; without the aic_/aiv_ prefix for one core: "
	"mac_ratio, vec_ratio, ...), as msprof writes them with "
	"--aic-metrics=PipeUtilization";

static int read_msprof(const char *path, char *text, struct pred_measured *o,
		       struct ks_err *err)
{
	char *save = NULL, *line, **f = NULL, *hdr[MSPROF_MAX_COLS], *hcopy = NULL;
	char opname[256] = "";
	struct ms_col cols[MSPROF_MAX_COLS];
	int nh, ncols = 0, lineno = 1, base[3], cdur, cop, cblock, rc = 0;
	/* per block (PipeUtilization's block_id; else per row): the pipes'
	 * times summed over its rows (sub-blocks), the longest core time */
	struct ms_block {
		char id[32];
		double pipe[MS_NPIPES], total;
		bool seen[MS_NPIPES];
	} *blk = NULL;
	size_t nblk = 0, capblk = 0;
	double sum[MS_NPIPES] = { 0 }, total_sum = 0;
	size_t cnt[MS_NPIPES] = { 0 }, total_cnt = 0;
	bool have_time[MS_NPIPES][3] = { { false } };

	line = strtok_r(text, "\r\n", &save);
	hcopy = strdup(line ? line : "");
	f = malloc(MSPROF_MAX_COLS * sizeof(*f));
	if (!hcopy || !f) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	nh = split_quoted(hcopy, hdr, MSPROF_MAX_COLS);
	for (int i = 0; i < nh; i++) {
		char *h = hdr[i];

		while (*h == ' ')
			h++;
		hdr[i] = h;
	}
	base[1] = col_of(hdr, nh, "aic_time(us)");
	base[2] = col_of(hdr, nh, "aiv_time(us)");
	base[0] = col_of(hdr, nh, "aicore_time(us)");
	if (base[0] < 0)
		base[0] = base[1];
	if (base[1] < 0)
		base[1] = col_of(hdr, nh, "aicore_time(us)");
	cdur = col_of(hdr, nh, "Task Duration(us)");
	cop = col_of(hdr, nh, "Op Name");
	cblock = col_of(hdr, nh, "block_id");
	/* The columns, a time preferred to a ratio of the same pipe and core. */
	for (int i = 0; i < nh; i++) {
		struct ms_col c;

		if (ms_parse_col(hdr[i], &c) && !c.ratio)
			have_time[c.pipe][c.core] = true;
	}
	for (int i = 0; i < nh; i++) {
		struct ms_col c;

		if (!ms_parse_col(hdr[i], &c) || (c.ratio && have_time[c.pipe][c.core]))
			continue;
		if (c.ratio && base[c.core] < 0) {
			rc = ks_err_set(err, -EINVAL, "--measured %s: the column %s is a ratio of "
					"the core's time, but the file has no %s", path, hdr[i],
					c.core == 2 ? "aiv_time(us)" : "aic_time(us) or "
					"aicore_time(us)");
			goto out;
		}
		c.col = i;
		cols[ncols++] = c;
	}
	if (ncols == 0) {
		rc = ks_err_set(err, -EINVAL, "--measured %s: an msprof file, but without %s",
				path, ms_expected);
		goto out;
	}
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		struct ms_block *b = NULL;
		double d, t = -1;
		int n;

		lineno++;
		n = split_quoted(line, f, MSPROF_MAX_COLS);
		if (n == 1 && !*f[0])
			continue;
		if (cop >= 0 && cop < n) {
			if (!*opname)
				snprintf(opname, sizeof(opname), "%s", f[cop]);
			else if (strcmp(opname, f[cop])) {
				rc = ks_err_set(err, -EINVAL, "--measured %s: line %d is operator "
						"\"%.60s\", line 2 \"%.60s\": a model is one kernel, so "
						"keep the rows of the one it describes", path, lineno,
						f[cop], opname);
				goto out;
			}
		}
		/* its block: a new one per row without block_id */
		for (size_t k = 0; cblock >= 0 && cblock < n && k < nblk && !b; k++)
			if (strncmp(blk[k].id, f[cblock], sizeof(blk[k].id) - 1) == 0)
				b = &blk[k];
		if (!b) {
			if (nblk == capblk) {
				struct ms_block *nb;

				capblk = capblk ? 2 * capblk : 64;
				nb = realloc(blk, capblk * sizeof(*blk));
				if (!nb || capblk > MAX_PASSES) {
					rc = ks_err_set(err, -ENOMEM, "--measured %s: too many rows",
							path);
					goto out;
				}
				blk = nb;
			}
			b = &blk[nblk++];
			memset(b, 0, sizeof(*b));
			b->total = -1;
			snprintf(b->id, sizeof(b->id), "%s",
				 cblock >= 0 && cblock < n ? f[cblock] : "");
		}
		for (int k = 0; k < ncols; k++) {
			const struct ms_col *c = &cols[k];

			if (c->col >= n || !ms_num(f[c->col], &d))
				continue;
			if (c->ratio) {
				double core_us;

				if (base[c->core] >= n || !ms_num(f[base[c->core]], &core_us))
					continue;
				if (d > 1) {
					rc = ks_err_set(err, -EINVAL, "--measured %s: line %d: %s is "
							"%g; a ratio is from 0 to 1", path, lineno,
							hdr[c->col], d);
					goto out;
				}
				d *= core_us;
			}
			b->pipe[c->pipe] += d;
			b->seen[c->pipe] = true;
		}
		if (cdur >= 0 && cdur < n)
			ms_num(f[cdur], &t);
		for (int k = 0; cdur < 0 && k < 3; k++)
			if (base[k] >= 0 && base[k] < n && ms_num(f[base[k]], &d) && d > t)
				t = d;
		if (t > b->total)
			b->total = t;
	}
	for (size_t k = 0; k < nblk; k++) {
		for (int p = 0; p < MS_NPIPES; p++)
			if (blk[k].seen[p]) {
				sum[p] += blk[k].pipe[p];
				cnt[p]++;
			}
		if (blk[k].total >= 0) {
			total_sum += blk[k].total;
			total_cnt++;
		}
	}
	for (size_t i = 0; i < MS_NUNITS; i++) {
		int p = ms_pipe_index(ms_units[i].pipe);
		bool dup = false;

		for (size_t j = 0; j < o->n; j++)
			dup |= strcmp(o->name[j], ms_units[i].pipe) == 0;
		if (dup || !cnt[p])
			continue;
		snprintf(o->name[o->n], sizeof(o->name[0]), "%s", ms_units[i].pipe);
		o->us[o->n++] = sum[p] / (double)cnt[p];
	}
	if (total_cnt)
		o->total_us = total_sum / (double)total_cnt;
	if (o->n == 0 && o->total_us < 0)
		rc = ks_err_set(err, -EINVAL, "--measured %s: no row has a measured time", path);
out:
	free(blk);
	free(hcopy);
	free(f);
	return rc;
}

/* msprof's files: op_summary has "Task Duration(us)", PipeUtilization
 * and the older ones the core times. */
static bool is_msprof(const char *text)
{
	const char *nl = strpbrk(text, "\r\n");
	size_t n = nl ? (size_t)(nl - text) : strlen(text);
	static const char *const keys[] = {
		"aic_time(us)", "aiv_time(us)", "aicore_time(us)", "Task Duration(us)",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *p = strstr(text, keys[i]);

		if (p && (size_t)(p - text) < n)
			return true;
	}
	return false;
}

static int read_pipes(const char *path, char *text, struct pred_measured *o,
		      struct ks_err *err)
{
	char *save = NULL, *line, *f[64];
	int n, cp, ct, lineno = 1;

	line = strtok_r(text, "\r\n", &save);
	n = line ? split_line(line, f, 64) : 0;
	cp = col_of(f, n, "Pipe");
	ct = col_of(f, n, "Time (us)");
	if (cp < 0 || ct < 0)
		return ks_err_set(err, -EINVAL, "--measured %s: neither a kscope op Timing.csv, "
				  "a CSV with the columns \"Pipe,Time (us)\", nor an msprof "
				  "op_summary or PipeUtilization CSV (a header with "
				  "aic_time(us), aiv_time(us), aicore_time(us) or Task "
				  "Duration(us), and %s)", path, ms_expected);
	while ((line = strtok_r(NULL, "\r\n", &save))) {
		double d;

		lineno++;
		n = split_line(line, f, 64);
		if (n <= cp || n <= ct)
			return ks_err_set(err, -EINVAL, "--measured %s: line %d has %d fields",
					  path, lineno, n);
		if (!num(f[ct], &d))
			return ks_err_set(err, -EINVAL, "--measured %s: line %d: \"%.40s\" is not "
					  "a time in microseconds", path, lineno, f[ct]);
		if (strcasecmp(f[cp], "total") == 0) {
			o->total_us = d;
			continue;
		}
		if (o->n >= PRED_MAX_PIPES || strlen(f[cp]) > KS_PRED_MAX_NAME)
			return ks_err_set(err, -EINVAL, "--measured %s: line %d: more than %d "
					  "pipes, or a pipe name longer than %d", path, lineno,
					  PRED_MAX_PIPES, KS_PRED_MAX_NAME);
		snprintf(o->name[o->n], sizeof(o->name[0]), "%s", f[cp]);
		o->us[o->n++] = d;
	}
	if (o->n == 0 && o->total_us < 0)
		return ks_err_set(err, -EINVAL, "--measured %s: no rows", path);
	return 0;
}

/* A kscope op directory: its Timing.csv, or the one Timing.csv one or two
 * levels down (a run directory with one launch). */
static int find_timing(const char *dir, char *out, size_t size, struct ks_err *err)
{
	char path[4200];
	int found = 0;
	DIR *d;
	struct dirent *de;

	snprintf(out, size, "%s/Timing.csv", dir);
	if (access(out, F_OK) == 0)
		return 0;
	d = opendir(dir);
	if (!d)
		return ks_err_set(err, -errno, "--measured %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		DIR *d2;
		struct dirent *e2;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/Timing.csv", dir, de->d_name);
		if (access(path, F_OK) == 0) {
			found++;
			snprintf(out, size, "%s", path);
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		d2 = opendir(path);
		while (d2 && (e2 = readdir(d2))) {
			char p2[4500];

			if (e2->d_name[0] == '.')
				continue;
			snprintf(p2, sizeof(p2), "%s/%s/Timing.csv", path, e2->d_name);
			if (access(p2, F_OK) == 0 && strlen(p2) < size) {
				found++;
				memcpy(out, p2, strlen(p2) + 1);
			}
		}
		if (d2)
			closedir(d2);
	}
	closedir(d);
	if (found == 1)
		return 0;
	return ks_err_set(err, -EINVAL, "--measured %s: %s; name the launch's directory or "
			  "its Timing.csv", dir, found ? "it holds several kscope op launches"
						       : "no kscope op Timing.csv in it");
}

int pred_measured_load(const char *path, struct pred_measured *o, struct ks_err *err)
{
	char file[4200], *text = NULL;
	struct stat st;
	size_t len;
	int rc;

	memset(o, 0, sizeof(*o));
	o->total_us = -1;
	if (stat(path, &st))
		return ks_err_set(err, -errno, "--measured %s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		rc = find_timing(path, file, sizeof(file), err);
		if (rc)
			return rc;
	} else {
		snprintf(file, sizeof(file), "%s", path);
	}
	if (strlen(file) >= sizeof(o->source))
		return ks_err_set(err, -ENAMETOOLONG, "--measured: the path is too long");
	memcpy(o->source, file, strlen(file) + 1);
	rc = ks_read_file_at(AT_FDCWD, file, 0, MEASURED_MAX_BYTES, &text, &len, err);
	if (rc)
		return rc;
	if (strlen(text) != len) {
		free(text);
		return ks_err_set(err, -EINVAL, "--measured %s: not a text file", file);
	}
	rc = pred_measured_parse(file, text, o, err);
	free(text);
	return rc;
}

int pred_measured_parse(const char *name, char *text, struct pred_measured *o,
			struct ks_err *err)
{
	if (!o->source[0])
		snprintf(o->source, sizeof(o->source), "%s", name);
	if (strncmp(text, "pass,", 5) == 0 || strstr(text, "duration_us"))
		return read_timing(name, text, o, err);
	if (is_msprof(text))
		return read_msprof(name, text, o, err);
	return read_pipes(name, text, o, err);
}

int pred_measured_check(const struct pred_chip *chip, const struct pred_measured *meas,
			struct ks_err *err)
{
	for (size_t j = 0; j < meas->n; j++) {
		bool known = false;
		char list[PRED_MAX_PIPES * (KS_PRED_MAX_NAME + 2) + 1];
		size_t len = 0;

		for (size_t p = 0; p < chip->npipes && !known; p++)
			known = strcasecmp(meas->name[j], chip->pipes[p]) == 0;
		if (known)
			continue;
		list[0] = '\0';
		for (size_t p = 0; p < chip->npipes; p++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
						p ? ", " : "", chip->pipes[p]);
		return ks_err_set(err, -EINVAL, "--measured %s: the pipe \"%s\" is none of the "
				  "chip's; accepted: %s, or total", meas->source, meas->name[j],
				  list);
	}
	return 0;
}
