/*
 * kscope's `config` message (proto.h) into struct ks_oprt_config, and the
 * targets file of application replay's later runs: the launches, each
 * identified by kernel name, global size and ordinal, whose event times
 * that run reports.  kscope checked every value it sent; the checks here
 * only keep a damaged message from turning into nonsense (the runtime then
 * stays off).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oprt_int.h"

static int get_uint(const struct ks_op_msg *m, const char *key, unsigned long long lo,
		    unsigned long long hi, unsigned long long def, unsigned long long *out,
		    struct ks_err *err)
{
	char v[64];

	if (!ks_op_msg_get(m, key, NULL, v, sizeof(v))) {
		*out = def;
		return 0;
	}
	*out = ks_op_msg_getu(m, key, hi + 1);
	if (*out < lo || *out > hi)
		return ks_err_set(err, -EINVAL, "config: %s=%s is not %llu to %llu", key, v,
				  lo, hi);
	return 0;
}

static int get_filter(const struct ks_op_msg *m, const char *key, struct ks_op_filter **f,
		      struct ks_err *err)
{
	char pat[KS_OP_FILTER_MAX + 2], why[256];

	*f = NULL;
	if (!ks_op_msg_get(m, key, NULL, pat, sizeof(pat)))
		return 0;
	if (ks_op_filter_compile(pat, f, why, sizeof(why)) != 0)
		return ks_err_set(err, -EINVAL, "config: %s: %s", key, why);
	return 0;
}

int ks_oprt_config_parse(const struct ks_op_msg *m, struct ks_oprt_config *c,
			 struct ks_err *err)
{
	unsigned long long v;
	char mode[32], targets[4096];
	int rc;

	memset(c, 0, sizeof(*c));
	if (!ks_op_msg_get(m, "mode", NULL, mode, sizeof(mode)) || strcmp(mode, "kernel") == 0)
		c->mode = KS_OPRT_MODE_KERNEL;
	else if (strcmp(mode, "application") == 0)
		c->mode = KS_OPRT_MODE_APPLICATION;
	else if (strcmp(mode, "range") == 0)
		c->mode = KS_OPRT_MODE_RANGE;
	else
		return ks_err_set(err, -EINVAL, "config: unknown mode=%s", mode);
	if ((rc = get_uint(m, "skip", 0, UINT64_MAX - 1, 0, &c->skip, err)))
		return rc;
	if ((rc = get_uint(m, "warmup", 0, 100000, 5, &v, err)))
		return rc;
	c->warmup = (unsigned)v;
	if ((rc = get_uint(m, "passes", 1, 100000, 10, &v, err)))
		return rc;
	c->passes = (unsigned)v;
	if ((rc = get_uint(m, "flush", 0, 1, 1, &v, err)))
		return rc;
	c->flush = v;
	if ((rc = get_uint(m, "mstx", 0, 1, 0, &v, err)))
		return rc;
	c->mstx = v;
	if ((rc = get_uint(m, "backup_all", 0, 1, 0, &v, err)))
		return rc;
	c->backup_all = v;
	if (!ks_op_msg_get(m, "dir", NULL, c->dir, sizeof(c->dir)) || c->dir[0] != '/')
		return ks_err_set(err, -EINVAL, "config: dir= is missing or not absolute");
	if ((rc = get_filter(m, "kernel_name", &c->kernel_name, err)) ||
	    (rc = get_filter(m, "mstx_include", &c->mstx_include, err)))
		return rc;
	if (ks_op_msg_get(m, "targets", NULL, targets, sizeof(targets))) {
		if (c->mode != KS_OPRT_MODE_APPLICATION)
			return ks_err_set(err, -EINVAL, "config: targets= outside application mode");
		c->timing_run = true;
		return ks_oprt_targets_load(targets, err);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Targets                                                             */
/* ------------------------------------------------------------------ */

struct target {
	const struct ks_oprt_name *nm;
	uint64_t g[3], ordinal;
	struct target *next;
};

#define TARGET_BUCKETS 1024

/* The targets of this run; filled once at load, read-only afterwards. */
static struct target *targets[TARGET_BUCKETS];

static size_t target_hash(const struct ks_oprt_name *nm, const uint64_t g[3], uint64_t k)
{
	uint64_t h = (uint64_t)(uintptr_t)nm * 0x9e3779b97f4a7c15u;

	h ^= g[0] * 0xff51afd7ed558ccdu + g[1] * 0xc4ceb9fe1a85ec53u + g[2] + k * 31;
	h ^= h >> 29;
	return (size_t)(h % TARGET_BUCKETS);
}

/* One line NAME,X:Y:Z,K. */
static int target_parse(char *line, struct ks_err *err, unsigned lineno)
{
	char *c1 = strchr(line, ','), *c2 = c1 ? strrchr(line, ',') : NULL;
	unsigned long long g[3], k;
	struct ks_oprt_name *nm;
	struct target *t;
	int n = 0;
	size_t h;

	if (!c1 || c2 == c1 || c1 == line)
		goto bad;
	*c1 = *c2 = '\0';
	if (sscanf(c1 + 1, "%llu:%llu:%llu%n", &g[0], &g[1], &g[2], &n) != 3 ||
	    c1[1 + n] != '\0' || sscanf(c2 + 1, "%llu%n", &k, &n) != 1 || c2[1 + n] != '\0')
		goto bad;
	nm = ks_oprt_name_get(line);
	t = malloc(sizeof(*t));
	if (!nm || !t) {
		free(t);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	nm->target = true;
	t->nm = nm;
	for (int d = 0; d < 3; d++)
		t->g[d] = g[d];
	t->ordinal = k;
	h = target_hash(nm, t->g, k);
	t->next = targets[h];
	targets[h] = t;
	return 0;
bad:
	return ks_err_set(err, -EINVAL, "targets line %u: expected NAME,X:Y:Z,K", lineno);
}

int ks_oprt_targets_load(const char *path, struct ks_err *err)
{
	FILE *f = fopen(path, "re");
	char line[4096];
	unsigned lineno = 0;
	int rc = 0;

	if (!f)
		return ks_err_set(err, -errno, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		lineno++;
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		if ((rc = target_parse(line, err, lineno)))
			break;
	}
	fclose(f);
	return rc;
}

bool ks_oprt_target_is(const struct ks_oprt_name *nm, const uint64_t gsize[3],
		       uint64_t ordinal)
{
	for (const struct target *t = targets[target_hash(nm, gsize, ordinal)]; t; t = t->next)
		if (t->nm == nm && t->ordinal == ordinal && t->g[0] == gsize[0] &&
		    t->g[1] == gsize[1] && t->g[2] == gsize[2])
			return true;
	return false;
}
