/*
 * libFuzzer target for the namer of the compiled front end's findings
 * files (src/memtools/rtsym): the input is written to a file, which
 * ks_rtsym_file rewrites; frames name modules by path ("obj"), which are
 * opened when they exist, so the corpus names the target itself.
 * Nothing may crash, read out of bounds or leak, and a line that is not
 * a stack or a C++ global's var record must come out unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rtsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/ks-fuzz-rtsym-XXXXXX";
	int fd = mkstemp(path);
	struct ks_err err;
	FILE *f;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	if (ks_rtsym_file(path, &err) == 0 && !memmem(data, size, "\"rec\":\"stack\"", 13) &&
	    !memmem(data, size, "\"rec\":\"var\"", 11)) {
		/* Nothing to name: the same bytes. */
		char *back = malloc(size + 1);

		f = fopen(path, "rb");
		if (!back || !f || fread(back, 1, size + 1, f) != size || memcmp(back, data, size))
			abort();
		fclose(f);
		free(back);
	}
	unlink(path);
	return 0;
}
