/*
 * The calibration as a whole: ks_calib_measure runs the memory sweep and
 * the CPU FLOP/s on a team of pinned threads, then the OpenCL device and
 * the CUDA device, and dates the result.  Also the small helpers the measurement files share
 * (progress, notes, byte counts).
 *
 * The CPU parts run first and with the team alone on the CPUs; the team
 * is stopped before OpenCL starts, since a CPU OpenCL device runs its own
 * threads on the same cores; CUDA comes last, one device after the other.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib_int.h"

void ks_calib_progress(const struct ks_calib_opts *o, const char *phase,
		       const char *what, int step, int steps)
{
	if (o->progress)
		o->progress(o->arg, phase, what, step, steps);
}

void ks_calib_note(const struct ks_calib_opts *o, bool warn, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!o->note)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o->note(o->arg, warn, msg);
}

void ks_calib_fmt_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%" PRIu64 " bytes", bytes);
	else if (v == (double)(uint64_t)v)
		snprintf(buf, size, "%.0f %s", v, units[u]);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
}

/* The memory the system can give without swapping (MemAvailable). */
static uint64_t mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "re");
	unsigned long long kb = 0;
	char line[256];
	long pages, psize;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	if (kb)
		return (uint64_t)kb * 1024;
	pages = sysconf(_SC_AVPHYS_PAGES);
	psize = sysconf(_SC_PAGESIZE);
	return pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 1ull << 30;
}

int ks_calib_measure(const struct ks_calib_opts *o, struct ks_calib *c,
		     struct ks_err *err)
{
	struct ks_calib_plan plan;
	struct ks_calib_team *team = NULL;
	struct ks_err e;
	struct tm tm;
	time_t now;
	int rc;

	memset(&plan, 0, sizeof(plan));
	plan.quick = o->quick;
	plan.threads = o->threads > 0 ? o->threads : ks_calib_cpus_allowed();
	/* A quarter of what is free: the sweep must not push the machine
	 * into swapping, which would measure the disk. */
	plan.mem_limit = mem_available() / 4;
	c->quick = o->quick;
	c->threads = plan.threads;
	c->nmem = c->ncompute = 0;
	c->have_opencl = 0;
	c->have_cuda = false;

	rc = ks_calib_team_start(&team, plan.threads, err);
	if (rc)
		return rc;
	rc = ks_calib_mem_measure(o, &plan, team, c, err);
	if (!rc)
		rc = ks_calib_flops_measure(o, &plan, team, c, err);
	ks_calib_team_stop(team);
	if (rc)
		return rc;
	if (c->nmem == 0)
		return ks_err_set(err, -EIO, "no memory level could be measured");

	if (o->opencl) {
		ks_err_clear(&e);
		if (ks_calib_ocl_measure(o, &plan, ks_calib_llc_total(&c->machine), c,
					 &e) != 0)
			ks_calib_note(o, false, "OpenCL not measured: %s", e.msg);
	}
	if (o->cuda) {
		ks_err_clear(&e);
		if (ks_calib_cuda_measure(o, &plan, c, &e) != 0)
			ks_calib_note(o, false, "CUDA: not measured: %s", e.msg);
	}

	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(c->created, sizeof(c->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return 0;
}
