/*
 * Run directories of programs started by an MPI launcher (mpirun, srun):
 * each rank's kscope writes rank<K>/ of one directory named after the
 * launcher, COMMAND_<its start>_<its pid>, the same for every rank
 * whenever it asks (kscope sample and instrument; kscope merge combines
 * the ranks).
 */
#include "mpirank.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int ks_mpi_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
					    "PMI_RANK", "SLURM_PROCID", NULL };

	for (int i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long r;

		if (!v || !*v)
			continue;
		r = strtol(v, &end, 10);
		if (!*end && r >= 0 && r < INT32_MAX)
			return (int)r;
	}
	return -1;
}

/* When the launcher (mpirun) started, from /proc: the boot time (btime in
 * /proc/stat, fixed) plus the launcher's start in clock ticks since boot
 * (field 22 of /proc/PID/stat).  Both are constants, so every rank gets
 * the same second, whenever it asks; 0 if they cannot be read. */
static time_t process_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks, btime = 0;
	FILE *f;
	int field = 2;

	f = fopen("/proc/stat", "r");
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !btime)
		return 0;
	p = strrchr(buf, ')'); /* the command may contain spaces */
	if (!p)
		return 0;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	ticks = strtoull(p, NULL, 10);
	return (time_t)(btime + ticks / (unsigned long long)sysconf(_SC_CLK_TCK));
}

int ks_mpi_rundir(const char *output, const char *command, int rank, struct ks_rundir *rd,
		  struct ks_err *err)
{
	char name[128], sub[32], stamp[32];
	pid_t launcher;
	time_t t;
	struct tm tm;

	if (rank < 0)
		return ks_rundir_create(output, command, 0, rd, err);
	launcher = getppid();
	t = process_start(launcher);
	if (!t)
		t = time(NULL);
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm);
	snprintf(name, sizeof(name), "%s_%s_%d", command, stamp, (int)launcher);
	snprintf(sub, sizeof(sub), "rank%d", rank);
	return ks_rundir_create_shared(output, name, sub, rd, err);
}
