/*
 * JSON strings of text kscope did not write itself (paths, names from a
 * program, messages cut by a bounded printf): jansson refuses a string
 * that is not valid UTF-8, so such text goes through ks_utf8_fix
 * (utf8.h) first.  Header-only, for the libraries that use jansson; the
 * others need not link it.
 */
#ifndef KS_JSONTEXT_H
#define KS_JSONTEXT_H

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "utf8.h"

/* A new JSON string of s, repaired if need be; NULL only when out of
 * memory. */
static inline json_t *ks_json_text(const char *s)
{
	size_t len = strlen(s), n;
	char *fixed;
	json_t *j;

	if (ks_utf8_valid(s, len))
		return json_stringn(s, len);
	fixed = ks_utf8_fix(s, len, &n);
	if (!fixed)
		return NULL;
	j = json_stringn(fixed, n);
	free(fixed);
	return j;
}

#endif
