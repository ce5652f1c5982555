/*
 * libFuzzer target for kscope op --simulate's deliverables (src/op/sim):
 * the raw file comes from kscope's Valgrind tool running a program kscope
 * does not trust, and may be cut short, so every byte of it is untrusted.
 * The input is the raw file; the deliverables are written into a fresh
 * run directory each time.  Nothing may crash, read out of bounds or
 * leak; when the call succeeds, the container written must read back
 * with every payload checked.  The fixtures of tests/op/sim are the
 * seeds.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kscope/vizbin.h>

#include "simpost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Empties dir (the deliverables are read-only; the directory is ours). */
static void clean(bool all)
{
	char run[96];

	snprintf(run, sizeof(run), "%s/run", dir);
	nftw(all ? dir : run, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	clean(true);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_simpost_opts o = { .clock_hz = 2e9 };
	struct ks_simpost_summary sum;
	struct ks_rundir run = { .path = NULL, .dirfd = -1 };
	struct ks_vb_reader *r;
	struct ks_vb_error verr;
	struct ks_err err;
	char raw[96], path[128];
	int fd;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/kscope-fuzz-simpost.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
	}
	snprintf(raw, sizeof(raw), "%s/hotspot.raw", dir);
	fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);
	snprintf(path, sizeof(path), "%s/run", dir);
	if (mkdir(path, 0700) != 0)
		abort();
	run.path = strdup(path);
	run.dirfd = open(path, O_RDONLY | O_DIRECTORY);
	if (!run.path || run.dirfd < 0)
		abort();
	o.raw_path = raw;
	if (ks_simpost_write(&run, &o, &sum, &err) == 0) {
		snprintf(path, sizeof(path), "%s/run/visualize_data.bin", dir);
		if (ks_vb_open(path, KS_VB_CHECK_PAYLOADS, &r, &verr) != 0)
			abort();
		ks_vb_close(r);
	}
	ks_rundir_close(&run);
	clean(false);
	return 0;
}
