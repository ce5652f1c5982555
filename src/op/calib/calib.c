/* Placeholder until the calibration is written. */
#include <errno.h>

#include "calib.h"

int ks_calib_path(char *path, size_t size, struct ks_err *err)
{
	(void)path;
	(void)size;
	return ks_err_set(err, -ENOSYS, "calibration is not available yet");
}

int ks_calib_load(struct ks_calib *c, struct ks_err *err)
{
	(void)c;
	return ks_err_set(err, -ENOSYS, "calibration is not available yet");
}
