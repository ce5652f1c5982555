/*
 * kscope tune --predict: every configuration's predicted time from a
 * kscope predict model (include/kscope/predict.h).  The model is parsed
 * once per configuration with the configuration's integer values as its
 * params; keys the model does not declare are ignored, so a model needs
 * to name only the keys that change its time.  String values are never
 * passed: a model's params are integers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "kscope/predict.h"
#include "tune_int.h"

int ks_tune_predict(const char *model, const struct ks_tune_space *space,
		    double *us, struct ks_err *err)
{
	const char **keys = calloc(space->nkeys, sizeof(*keys));
	const char **vals = calloc(space->nkeys, sizeof(*vals));
	char msg[KS_ERR_MSG_MAX - 128];
	int rc = 0;

	if (!keys || !vals) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	for (size_t c = 0; c < space->nconfigs; c++) {
		struct ks_pred_model *m;
		size_t n = 0;
		double cycles = 0, hz;
		char label[160];

		for (size_t k = 0; k < space->nkeys; k++)
			if (ks_tune_space_is_int(space, c, k)) {
				keys[n] = space->keys[k];
				vals[n] = space->values[c * space->nkeys + k];
				n++;
			}
		ks_tune_space_label(space, c, label, sizeof(label));
		msg[0] = '\0';
		m = ks_pred_parse_file(model, NULL, keys, vals, n,
				       KS_PRED_PARSE_IGNORE_UNKNOWN, msg, sizeof(msg));
		if (!m) {
			rc = ks_err_set(err, -EINVAL, "option --predict: configuration %zu (%s): %s",
					c, label, msg[0] ? msg : "the model cannot be read");
			goto out;
		}
		if (ks_pred_run(m, &cycles) != 0) {
			rc = ks_err_set(err, -EINVAL, "option --predict: configuration %zu (%s): %s",
					c, label, ks_pred_error(m));
			ks_pred_model_free(m);
			goto out;
		}
		hz = ks_pred_chip_clock_hz(m);
		ks_pred_model_free(m);
		if (!(hz > 0)) {
			rc = ks_err_set(err, -EINVAL, "option --predict: the model's chip has no "
					"clock (%g Hz)", hz);
			goto out;
		}
		us[c] = cycles / hz * 1e6;
	}
out:
	free(keys);
	free(vals);
	return rc;
}
