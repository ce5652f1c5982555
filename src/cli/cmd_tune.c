/* kscope tune (being written). */
#include "cli.h"

static const struct ks_opt tune_opts[] = { KS_OPT_END };

static int tune_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	(void)cmd;
	(void)p;
	return KS_EXIT_FAIL;
}

const struct ks_cmd ks_cmd_tune = {
	.name = "tune",
	.summary = "(being written)",
	.usage = "",
	.description = "",
	.args = { .opts = tune_opts, .opts_size = sizeof(struct ks_common_opts) },
	.run = tune_run,
};
