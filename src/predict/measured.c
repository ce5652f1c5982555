/*
 * --measured: the times a prediction is compared with.  Either a kscope op
 * result (a launch's directory, or its Timing.csv: the median of the
 * measured passes is the kernel's time) or a CSV of per-pipe times with
 * the columns "Pipe,Time (us)" (a row "total" gives the kernel's time).
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
		return ks_err_set(err, -EINVAL, "--measured %s: neither a kscope op Timing.csv "
				  "nor a CSV with the columns \"Pipe,Time (us)\"", path);
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
	if (strncmp(text, "pass,", 5) == 0 || strstr(text, "duration_us"))
		rc = read_timing(file, text, o, err);
	else
		rc = read_pipes(file, text, o, err);
	free(text);
	return rc;
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
