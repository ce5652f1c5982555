/*
 * kscope op's named sets: the metric sets of --aic-metrics and the
 * machine presets of --soc-version (op_simulate.h).  docs/simulate.md
 * and docs/op.md give the tables users read; this file is their source.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "op_simulate.h"
#include "simpost.h"

/* ------------------------------------------------------------------ */
/* --aic-metrics                                                       */
/* ------------------------------------------------------------------ */

struct metric_set {
	const char *name;
	unsigned sim;            /* KS_SIM_METRIC_* it selects; 0: none */
	const char *why_not;     /* why it cannot apply, or NULL */
};

/* The design's set names.  --simulate chooses among its deliverables;
 * on-board, kscope op always records what it can, so only Default is
 * accepted there, and each other name says why. */
static const struct metric_set metric_sets[] = {
	{ "Default", KS_SIM_METRIC_ALL, NULL },
	{ "PipeUtilization", KS_SIM_METRIC_PIPE, NULL },
	{ "PMSampling", KS_SIM_METRIC_BANDWIDTH, NULL },
	{ "Source", KS_SIM_METRIC_SOURCE, NULL },
	{ "MemoryDetail", KS_SIM_METRIC_MEMORY, NULL },
	{ "ResourceConflictRatio", 0,
	  "it counts bank conflicts of Ascend vector instructions on the unified "
	  "buffer (UB), which the CPUs and GPUs kscope profiles do not have" },
	{ "MemoryUB", 0, "the unified buffer (UB) is Ascend AI Core memory" },
	{ "MemoryL0", 0, "the L0 buffers are Ascend AI Core memory" },
	{ "ArithmeticUtilization", 0,
	  "it reads Ascend cube and vector unit counters; on CPUs --simulate's "
	  "PipeUtilization shows each pipe's share" },
	{ "Memory", 0, NULL },
	{ "L2Cache", 0, NULL },
	{ "Occupancy", 0, NULL },
	{ "TimelineDetail", 0, NULL },
	{ "KernelScale", 0, NULL },
	{ NULL, 0, NULL },
};

static const struct metric_set *metric_find(const char *name, size_t len)
{
	for (const struct metric_set *m = metric_sets; m->name; m++)
		if (strlen(m->name) == len && strncasecmp(m->name, name, len) == 0)
			return m;
	return NULL;
}

int ks_op_metrics_parse(const char *list, bool simulate, unsigned *mask,
			struct ks_err *err)
{
	const char *p = list;

	*mask = 0;
	if (!list || !*list) {
		*mask = KS_SIM_METRIC_ALL;
		return 0;
	}
	for (;;) {
		size_t len = strcspn(p, ",");
		const struct metric_set *m = metric_find(p, len);

		if (len == 0)
			return ks_err_set(err, -EINVAL, "option --aic-metrics: '%s' has an "
					  "empty set name; accepted: names separated by ','",
					  list);
		if (!m)
			return ks_err_set(err, -EINVAL, "option --aic-metrics: unknown set "
					  "'%.*s'; accepted: %s", (int)len, p,
					  simulate ? "Default, PipeUtilization, PMSampling, "
						     "Source, MemoryDetail" : "Default");
		if (m->why_not)
			return ks_err_set(err, -EINVAL, "option --aic-metrics: %s does not "
					  "apply here: %s", m->name, m->why_not);
		if (!simulate && m->sim != KS_SIM_METRIC_ALL)
			return ks_err_set(err, -EINVAL, "option --aic-metrics: %s: on-board, "
					  "kscope op always records every launch's times, "
					  "buffers and the counters the device offers (CUDA: "
					  "DRAM bytes and occupancy through CUPTI), so only "
					  "Default applies; the other sets choose among "
					  "--simulate's deliverables", m->name);
		if (simulate && m->sim == 0)
			return ks_err_set(err, -EINVAL, "option --aic-metrics: %s is an "
					  "on-board set of the design; on-board, kscope op "
					  "records it with Default; --simulate accepts "
					  "Default, PipeUtilization, PMSampling, Source and "
					  "MemoryDetail", m->name);
		*mask |= m->sim;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

/* ------------------------------------------------------------------ */
/* --soc-version                                                       */
/* ------------------------------------------------------------------ */

/* Sizes, ways and load-to-use latencies (cycles) as published:
 *   skylake, skylake-sp: AnandTech, "The Intel Skylake-X Review", page 4,
 *     "Comparison: Skylake-S and Skylake-SP Caches" (L2 11 and 11-13
 *     cycles, L3 44 and 77 cycles); the L2 of skylake-sp is given 12.
 *   zen3: AMD's Ryzen 9 5950X specifications (32 KB 8-way L1D, 512 KB
 *     8-way L2, 32 MB L3 per eight-core CCD, 3.4 GHz base clock);
 *     latencies from AnandTech, "AMD Zen 3 Ryzen Deep Dive Review", page 4
 *     (L2 12, L3 46 cycles).
 * Every set count is a power of two, as the engine needs. */
static const struct ks_op_soc socs[] = {
	{ "skylake", "Intel Core i7-6700K (Skylake-S, 4 cores, 8 MiB L3)",
	  "L1=32k:8:64,L2=256k:4:64:11,L3=8m:16:64:44", 4.0 },
	{ "skylake-sp", "Intel Xeon Gold 6142 (Skylake-SP, 16 cores, 22 MiB L3)",
	  "L1=32k:8:64,L2=1m:16:64:12,L3=22m:11:64:77", 2.6 },
	{ "zen3", "AMD Ryzen 9 5950X (Zen 3), one CCD's 32 MiB L3",
	  "L1=32k:8:64,L2=512k:8:64:12,L3=32m:16:64:46", 3.4 },
	{ NULL, NULL, NULL, 0 },
};

const struct ks_op_soc *ks_op_soc_find(const char *name, struct ks_err *err)
{
	char names[256] = "";

	for (const struct ks_op_soc *s = socs; s->name; s++)
		if (strcmp(s->name, name) == 0)
			return s;
	for (const struct ks_op_soc *s = socs; s->name; s++) {
		size_t n = strlen(names);

		snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "", s->name);
	}
	ks_err_set(err, -EINVAL, "option --soc-version: unknown machine '%s'; "
		   "accepted: %s (docs/simulate.md lists their caches and clocks)",
		   name, names);
	return NULL;
}
