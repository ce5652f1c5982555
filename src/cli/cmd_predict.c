/* kscope predict (being written). */
#include "cli.h"

static const struct ks_opt predict_opts[] = { KS_OPT_END };

static int predict_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	(void)cmd;
	(void)p;
	return KS_EXIT_FAIL;
}

const struct ks_cmd ks_cmd_predict = {
	.name = "predict",
	.summary = "(being written)",
	.usage = "",
	.description = "",
	.args = { .opts = predict_opts, .opts_size = sizeof(struct ks_common_opts) },
	.run = predict_run,
};
