/*
 * ks_mtr_write (mtreport.h): reads findings.jsonl (and the files of the
 * program's child processes), derives the views and
 * writes report.txt, report.json and findings.sarif into the run
 * directory.  Each file is written
 * under a temporary name and committed only when complete; if one fails,
 * the ones after it are not attempted and the error names the file.
 */
#include "mtreport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mtreport_int.h"

int ks_mtr_finish(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		  struct ks_rundir *rd, FILE *text, struct ks_mtr_summary *sum,
		  struct ks_err *err)
{
	int rc;

	snprintf(sum->analysis, sizeof(sum->analysis), "%s",
		 ks_mtr_analysis_names[r->start.analysis]);
	sum->errors = r->nreported;
	sum->filtered = r->nfiltered;
	sum->false_lines = r->false_lines;
	sum->truncated = r->truncated;
	sum->processes = r->nprocs;
	for (size_t i = 0; i < r->nprocs; i++)
		sum->truncated_procs += r->procs[i].truncated;
	if (!rd)
		return 0;
	rc = ks_mtr_write_text(r, o, rd, text, err);
	if (!rc)
		rc = ks_mtr_write_json(r, o, rd, err);
	if (!rc)
		rc = ks_mtr_write_sarif(r, o, rd, err);
	return rc;
}

int ks_mtr_write(const char *findings_path, struct ks_rundir *rd,
		 const struct ks_mtr_opts *o, FILE *text,
		 struct ks_mtr_summary *sum, struct ks_err *err)
{
	struct ks_mtr_run *r = calloc(1, sizeof(*r));
	int rc;

	memset(sum, 0, sizeof(*sum));
	if (!r)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = ks_mtr_read(r, findings_path, err);
	for (size_t i = 0; !rc && i < o->nchildren; i++)
		rc = ks_mtr_read(r, o->children[i], err);
	if (!rc) {
		ks_mtr_procs_done(r, o);
		rc = ks_mtr_views(r, o, err);
	}
	if (rc)
		goto out;

	rc = ks_mtr_finish(r, o, rd, text, sum, err);
out:
	ks_mtr_run_free(r);
	free(r);
	return rc;
}
