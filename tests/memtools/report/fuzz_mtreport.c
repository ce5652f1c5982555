/*
 * libFuzzer target for the memory-tool reports: the input is a
 * findings.jsonl.  Any input must be read without a crash, leak or
 * out-of-bounds access (the build has AddressSanitizer and
 * UndefinedBehaviorSanitizer), and ks_mtr_write must either succeed and
 * leave every report it owes, or fail with a message and leave nothing
 * (not even a temporary file).  The seeds are the unit test's fixtures.
 *
 * The run directory lives in /dev/shm when it can: every report is
 * fsync'ed, which on a disk would make each input take milliseconds.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mtreport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The process's run directory and input file: made once, reused (a fuzzer
 * process runs inputs one after another). */
static struct ks_rundir rd = { .path = NULL, .dirfd = -1 };
static int in_fd = -1;
static char in_path[64];
static char top[64];   /* the temporary directory holding rd */

static int clear_rundir(bool *hidden);

/* At exit: the run directory and its parent go. */
static void cleanup(void)
{
	bool hidden;

	if (rd.dirfd < 0)
		return;
	clear_rundir(&hidden);
	rmdir(rd.path);
	ks_rundir_close(&rd);
	rmdir(top);
}

static void setup(void)
{
	char tmpl[] = "/dev/shm/kscope-fuzz-mtreport.XXXXXX", *dir;
	struct ks_err err;

	dir = mkdtemp(tmpl);
	if (!dir) {
		snprintf(tmpl, sizeof(tmpl), "/tmp/kscope-fuzz-mtr.XXXXXX");
		dir = mkdtemp(tmpl);
	}
	if (!dir || ks_rundir_create(dir, "fuzz", 0, &rd, &err) != 0)
		abort();
	snprintf(top, sizeof(top), "%s", dir);
	atexit(cleanup);
	in_fd = memfd_create("findings.jsonl", 0);
	if (in_fd < 0)
		abort();
	snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
}

/* Removes what the last input wrote; returns how many files there were
 * and whether one was a temporary (hidden) file. */
static int clear_rundir(bool *hidden)
{
	DIR *d = fdopendir(dup(rd.dirfd));
	struct dirent *de;
	int n = 0;

	if (!d)
		abort();
	rewinddir(d); /* the dup shares the position of the last walk */
	*hidden = false;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		*hidden |= de->d_name[0] == '.';
		if (unlinkat(rd.dirfd, de->d_name, 0) != 0)
			abort();
		n++;
	}
	closedir(d);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_mtr_opts o = { .filter = size & 1, .max_stack = 4,
				 .command = "kscope memcheck ./fuzz" };
	struct ks_mtr_summary sum;
	struct ks_err err = { 0 };
	bool hidden;
	int rc, n;

	if (in_fd < 0)
		setup();
	if (ftruncate(in_fd, 0) != 0 || pwrite(in_fd, data, size, 0) != (ssize_t)size)
		abort();
	rc = ks_mtr_write(in_path, &rd, &o, NULL, &sum, &err);
	n = clear_rundir(&hidden);
	if (hidden)
		abort(); /* a temporary file was left behind */
	if (rc) {
		if (rc > 0 || !err.msg[0] || n != 0)
			abort(); /* a failure explains itself and leaves nothing */
	} else {
		/* report.txt, report.json and findings.sarif. */
		if (n != 3)
			abort();
	}
	return 0;
}
