/*
 * libFuzzer target for the reader of AddressSanitizer's reports
 * (src/memtools/asan): the input is read as an ASan log, and what was
 * read is turned into the reports' model with the filter on and off
 * (ks_mcx_report without a run directory).  Frames are not named (no
 * libdw session: the input's module paths are not opened).  Nothing may
 * crash, read out of bounds or leak; an error read must have a kind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "asan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_asan_read_opts ro = { .show_leaks = 15, .sym = NULL };
	struct ks_asan_info info;
	struct ks_mcx_doc d;
	struct ks_mcx_report_opts o;
	struct ks_mtr_summary sum;
	struct ks_err err;

	if (ks_asan_read_mem(&d, &info, (const char *)data, size, &ro, &err))
		return 0;
	for (size_t i = 0; i < d.nerrors; i++)
		if (!d.errors[i].kind)
			abort();
	for (int filter = 0; filter < 2; filter++) {
		memset(&o, 0, sizeof(o));
		o.mtr.filter = filter;
		o.mtr.max_stack = 12;
		o.leak_error_kinds = filter ? 5 : 15;
		(void)ks_mcx_report(&d, 1, &o, NULL, NULL, &sum, &err);
	}
	ks_mcx_free(&d);
	return 0;
}
