/*
 * libFuzzer target for kscope instrument's reader of the runtime's
 * counters files (instr.<pid>.txt, docs/instrument.md): the input is
 * written as such a file into a directory of the target's own, and read
 * the way a run reads it (tables, call graph, traces).  Nothing may
 * crash, read out of bounds or leak; a file that is not right is refused
 * with a message.
 */
#include <assert.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "instr_counters.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static int dirfd_ = -1;

static void cleanup(void)
{
	if (dirfd_ >= 0) {
		unlinkat(dirfd_, "instr.1.txt", 0);
		close(dirfd_);
	}
	if (dir[0])
		rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_err err;
	int fd;

	if (dirfd_ < 0) {
		snprintf(dir, sizeof(dir), "/tmp/kscope-fuzz-instr-XXXXXX");
		if (!mkdtemp(dir) || (dirfd_ = open(dir, O_RDONLY | O_DIRECTORY)) < 0)
			abort();
		atexit(cleanup);
	}
	fd = openat(dirfd_, "instr.1.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		abort();
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	ks_err_clear(&err);
	if (ks_instr_counters_read(dirfd_, "instr.1.txt", &err) != 0)
		assert(err.msg[0]);
	return 0;
}
