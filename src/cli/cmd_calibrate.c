/* kscope calibrate: placeholder until the command is written. */
#include <stdio.h>

#include "cli.h"
#include "log.h"

struct calibrate_opts {
	struct ks_common_opts common;
};

static const struct ks_opt calibrate_opts[] = {
	KS_COMMON_OPTS(struct calibrate_opts),
	KS_OPT_END
};

static int calibrate_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	(void)p;
	ks_error("%s is not available yet", cmd->name);
	return KS_EXIT_FAIL;
}

const struct ks_cmd ks_cmd_calibrate = {
	.name = "calibrate",
	.summary = "calibrate (not available yet)",
	.usage = "[options]",
	.description = "",
	.args = { .opts = calibrate_opts, .opts_size = sizeof(struct calibrate_opts),
		  .takes_program = false },
	.run = calibrate_run,
};
