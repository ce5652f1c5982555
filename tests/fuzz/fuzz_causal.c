/*
 * libFuzzer target for kscope causal's readers (src/causal): the input is
 * read as a runtime's raw file (ks_causal_data_read) against a table of
 * 8 lines, analysed and written out in every format, and read again as a
 * line table (ks_causal_lines_read_table, a run's lines.tsv).  The
 * readers take paths: the input goes to a memory file, named through
 * /proc/self/fd.  Nothing may crash, read out of bounds or leak; a
 * refused input leaves the data set as it was.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "causal_lines.h"
#include "causal_post.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct ks_causal_line lines[8] = {
	{ "/src/a.c", 1, NULL }, { "/src/a.c", 2, "f" }, { "/src/a.c", 3, NULL },
	{ "/src/b.c", 10, NULL }, { "/src/b.c", 11, "g<int>" }, { "/src/b,c.c", 5, NULL },
	{ "/src/\"q\".c", 6, "h, i" }, { "/src/c.c", 7, NULL },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_causal_data d;
	struct ks_causal_result r = { 0 };
	struct ks_causal_lines table;
	struct ks_err err;
	char path[64];
	FILE *null;
	int fd = memfd_create("causal", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	null = fopen("/dev/null", "w");
	if (ks_causal_data_init(&d, 8) == 0) {
		if (ks_causal_data_read(&d, path, &err) == 0 &&
		    ks_causal_analyze(&d, NULL, &r, &err) == 0 && null) {
			ks_causal_write_coz(null, &d, lines, &err);
			ks_causal_write_csv(null, &r, lines, &err);
			ks_causal_write_report(null, &r, lines, 3, &err);
		}
		ks_causal_result_free(&r);
		ks_causal_data_free(&d);
	}
	if (ks_causal_lines_read_table(path, &table, &err) == 0)
		ks_causal_lines_free(&table);
	if (null)
		fclose(null);
	close(fd);
	return 0;
}
