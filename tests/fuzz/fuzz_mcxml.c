/*
 * libFuzzer target for the reader of Memcheck's XML (src/memtools/mcxml):
 * the input is read as a memcheck.xml, truncated, damaged, followed by
 * anything, and what was read is turned into the reports' model with the
 * filter on and off (ks_mcx_report without a run directory).  Nothing may
 * crash, read out of bounds or leak; an error read must have a kind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mcxml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_mcx_doc d[2];
	struct ks_mcx_report_opts o;
	struct ks_mtr_summary sum;
	struct ks_err err;
	size_t half = size / 2;

	/* The whole input as one process, its first half as a second. */
	if (ks_mcx_read_mem(&d[0], (const char *)data, size, &err))
		return 0;
	if (ks_mcx_read_mem(&d[1], (const char *)data, half, &err))
		memset(&d[1], 0, sizeof(d[1]));
	for (size_t i = 0; i < d[0].nerrors; i++)
		(void)ks_mcx_kind_name(&d[0].errors[i]);
	for (int filter = 0; filter < 2; filter++) {
		memset(&o, 0, sizeof(o));
		o.mtr.filter = filter;
		o.mtr.max_stack = 12;
		o.leak_error_kinds = filter ? 5 : 15;
		(void)ks_mcx_report(d, d[1].pid || d[1].nerrors ? 2 : 1, &o, NULL, NULL, &sum,
				    &err);
	}
	ks_mcx_free(&d[0]);
	ks_mcx_free(&d[1]);
	return 0;
}
