/* The text language (docs/predict.md, "The language"). */
#include <errno.h>
#include <stdio.h>

#include "kscope/predict.h"

struct ks_pred_model *ks_pred_parse_file(const char *path, const char *chip,
					 const char *const *keys,
					 const char *const *values, size_t n,
					 unsigned flags, char *err, size_t errsize)
{
	(void)chip; (void)keys; (void)values; (void)n; (void)flags;
	if (err && errsize)
		snprintf(err, errsize, "%s: the model language is not built yet", path);
	return NULL;
}
