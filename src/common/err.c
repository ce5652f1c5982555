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
	/* One line, whatever the parts came from (a parser's message can
	 * quote the input's own newlines): control characters become spaces. */
	for (char *c = err->msg; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return code;
}

void ks_err_clear(struct ks_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->msg[0] = '\0';
}
