/*
 * Writes the CUDA calibration's PTX kernels (src/op/calib/calib_cuda_ptx.c)
 * to DIR/<entry>.ptx, one file a kernel, with its target in DIR/<entry>.target,
 * for test_calib_cuda_ptx.sh to check with the toolkit's ptxas: the PTX
 * only runs on a GPU, but a syntax error should fail the tests anywhere
 * the toolkit is installed.
 *
 *   usage: calib_ptx_dump DIR
 */
#include <stdio.h>

#include "calib_int.h"

static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	static char text[KS_CALIB_PTX_MAX];
	char path[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: calib_ptx_dump DIR\n");
		return 2;
	}
	for (int k = 0; k < KS_CALIB_NPTX; k++) {
		const struct ks_calib_ptx_info *in = &ks_calib_ptx_info[k];

		if (ks_calib_ptx_text((enum ks_calib_ptx)k, text, sizeof(text)) < 0) {
			fprintf(stderr, "calib_ptx_dump: %s does not fit\n", in->entry);
			return 1;
		}
		snprintf(path, sizeof(path), "%s/%s.ptx", argv[1], in->entry);
		if (write_text(path, text) != 0)
			return 1;
		snprintf(path, sizeof(path), "%s/%s.target", argv[1], in->entry);
		if (write_text(path, in->target) != 0)
			return 1;
	}
	return 0;
}
