/* kscope op: placeholder until the command is written. */
#include <stdio.h>

#include "cli.h"
#include "log.h"

struct op_opts {
	struct ks_common_opts common;
};

static const struct ks_opt op_opts[] = {
	KS_COMMON_OPTS(struct op_opts),
	KS_OPT_END
};

static int op_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	(void)p;
	ks_error("%s is not available yet", cmd->name);
	return KS_EXIT_FAIL;
}

const struct ks_cmd ks_cmd_op = {
	.name = "op",
	.summary = "op (not available yet)",
	.usage = "[options]",
	.description = "",
	.args = { .opts = op_opts, .opts_size = sizeof(struct op_opts),
		  .takes_program = true },
	.run = op_run,
};
