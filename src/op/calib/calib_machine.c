/*
 * What identifies this machine, and the key of its calibration file.
 *
 * A calibration holds for one machine: the same CPU model and number of
 * logical CPUs, the same caches, about the same memory and the same
 * OpenCL devices and drivers, and the same NVIDIA GPUs and driver.  The
 * key is a 64-bit FNV-1a hash of those facts written out as text, so a
 * change to any of them (a new driver, a VM resized) leads to a new file
 * and a new measurement, while the facts
 * that vary from boot to boot (free memory, the exact MemTotal) are left
 * out or rounded.  The caches come from sysfs as seen by CPU 0; the
 * memory sweep reads its levels from them.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "calib_int.h"

#define SYSFS_CACHE "/sys/devices/system/cpu/cpu0/cache"

/* Reads the first line of a small text file, without its newline. */
static int read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int rc = -ENOENT;

	if (!f)
		return -errno;
	if (fgets(buf, (int)size, f)) {
		buf[strcspn(buf, "\n")] = '\0';
		rc = 0;
	}
	fclose(f);
	return rc;
}

/* "32K", "36608K", "1M", "1024" to bytes; 0 if unreadable. */
static uint64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		return 0;
	switch (toupper((unsigned char)*end)) {
	case 'K': return v << 10;
	case 'M': return v << 20;
	case 'G': return v << 30;
	case '\0': return v;
	default: return 0;
	}
}

/* How many CPUs a list such as "0-3,8,10-11" names. */
static int count_cpu_list(const char *s)
{
	int n = 0;

	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s)
			break;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			s = end;
		}
		if (b >= a)
			n += (int)(b - a + 1);
		if (*s == ',')
			s++;
		else
			break;
	}
	return n;
}

static void probe_caches(struct ks_calib_machine *m)
{
	for (int i = 0; i < 32 && m->ncaches < KS_CALIB_MAX_CACHES; i++) {
		struct ks_calib_cache c;
		char path[128], line[256];
		size_t at;

		memset(&c, 0, sizeof(c));
		snprintf(path, sizeof(path), SYSFS_CACHE "/index%d/level", i);
		if (read_line(path, line, sizeof(line)) != 0)
			break;
		c.level = atoi(line);
		snprintf(path, sizeof(path), SYSFS_CACHE "/index%d/type", i);
		if (read_line(path, line, sizeof(line)) != 0)
			continue;
		if (strcmp(line, "Data") != 0 && strcmp(line, "Unified") != 0)
			continue;
		snprintf(c.type, sizeof(c.type), "%.15s", line);
		snprintf(path, sizeof(path), SYSFS_CACHE "/index%d/size", i);
		if (read_line(path, line, sizeof(line)) != 0)
			continue;
		c.bytes = parse_size(line);
		snprintf(path, sizeof(path), SYSFS_CACHE "/index%d/shared_cpu_list", i);
		c.shared_cpus = read_line(path, line, sizeof(line)) == 0
					? count_cpu_list(line) : 1;
		if (c.shared_cpus < 1)
			c.shared_cpus = 1;
		if (c.level < 1 || c.bytes == 0)
			continue;
		/* Keep them sorted by level, one per level. */
		for (at = 0; at < m->ncaches && m->caches[at].level < c.level; at++)
			;
		if (at < m->ncaches && m->caches[at].level == c.level)
			continue;
		memmove(&m->caches[at + 1], &m->caches[at],
			(m->ncaches - at) * sizeof(c));
		m->caches[at] = c;
		m->ncaches++;
	}
}

/* The CPU's model name from /proc/cpuinfo, else the architecture. */
static void probe_cpu(struct ks_calib_machine *m)
{
	static const char *const keys[] = { "model name", "Model Name", "cpu model",
					    "Hardware", "cpu", NULL };
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512];
	struct utsname u;

	m->cpu[0] = '\0';
	for (int k = 0; f && keys[k] && !m->cpu[0]; k++) {
		rewind(f);
		while (fgets(line, sizeof(line), f)) {
			size_t kl = strlen(keys[k]);
			char *v;

			if (strncmp(line, keys[k], kl) != 0)
				continue;
			v = line + kl;
			while (*v == ' ' || *v == '\t')
				v++;
			if (*v != ':')
				continue;
			v++;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			snprintf(m->cpu, sizeof(m->cpu), "%s", v);
			break;
		}
	}
	if (f)
		fclose(f);
	if (!m->cpu[0] && uname(&u) == 0)
		snprintf(m->cpu, sizeof(m->cpu), "%s", u.machine);
	/* Printable ASCII only: it goes into JSON and the key. */
	for (char *p = m->cpu; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

void ks_calib_machine_key(struct ks_calib_machine *m)
{
	uint64_t h = 0xcbf29ce484222325ull;
	char buf[512];

	snprintf(buf, sizeof(buf), "cpu=%s\ncpus=%d\n", m->cpu, m->cpus);
	h = fnv1a(h, buf);
	for (size_t i = 0; i < m->ncaches; i++) {
		snprintf(buf, sizeof(buf), "cache=L%d %s %" PRIu64 " %d\n",
			 m->caches[i].level, m->caches[i].type, m->caches[i].bytes,
			 m->caches[i].shared_cpus);
		h = fnv1a(h, buf);
	}
	/* Whole GiB: MemTotal moves by a few pages between kernels. */
	snprintf(buf, sizeof(buf), "memory_gib=%" PRIu64 "\n",
		 (uint64_t)((m->memory_bytes + (512ull << 20)) >> 30));
	h = fnv1a(h, buf);
	for (size_t i = 0; i < m->ndevices; i++) {
		snprintf(buf, sizeof(buf), "opencl=%s\n", m->devices[i]);
		h = fnv1a(h, buf);
	}
	/* Last, and only when there are some: a machine without NVIDIA GPUs
	 * keeps the key it had before CUDA devices were hashed. */
	for (size_t i = 0; i < m->ncuda; i++) {
		snprintf(buf, sizeof(buf), "cuda=%s\n", m->cuda_devices[i]);
		h = fnv1a(h, buf);
	}
	snprintf(m->key, sizeof(m->key), "%016" PRIx64, h);
}

int ks_calib_machine_probe(struct ks_calib_machine *m, struct ks_err *err)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	long cpus = sysconf(_SC_NPROCESSORS_CONF);

	(void)err;
	memset(m, 0, sizeof(*m));
	probe_cpu(m);
	m->cpus = cpus > 0 ? (int)cpus : 1;
	probe_caches(m);
	m->memory_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
	m->ndevices = ks_calib_ocl_device_ids(m->devices, KS_CALIB_MAX_DEVICES);
	m->ncuda = ks_calib_cuda_device_ids("/proc/driver/nvidia", m->cuda_devices,
					    KS_CALIB_MAX_DEVICES);
	ks_calib_machine_key(m);
	return 0;
}
