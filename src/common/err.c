/*
 * ks_err_set and friends: filling the error record of err.h.
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int ks_err_set(struct ks_err *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

void ks_err_clear(struct ks_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}
