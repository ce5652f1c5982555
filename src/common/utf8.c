/*
 * utf8.c: validating and repairing UTF-8 (utf8.h).
 */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

size_t ks_utf8_len(const unsigned char *s, size_t left)
{
	unsigned c, lo = 0x80, hi = 0xbf;
	size_t n;

	if (left == 0)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		/* no overlong forms (E0 80..9F), no surrogates (ED A0..BF) */
		lo = c == 0xe0 ? 0xa0 : 0x80;
		hi = c == 0xed ? 0x9f : 0xbf;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		/* no overlong forms (F0 80..8F), nothing above U+10FFFF */
		lo = c == 0xf0 ? 0x90 : 0x80;
		hi = c == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (left < 2 || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (left <= i || (s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

bool ks_utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = u[i] ? ks_utf8_len(u + i, len - i) : 0;

		if (!n)
			return false;
		i += n;
	}
	return true;
}

char *ks_utf8_fix(const char *s, size_t len, size_t *out_len)
{
	const unsigned char *u = (const unsigned char *)s;
	char *out = malloc(2 * len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = u[i] ? ks_utf8_len(u + i, len - i) : 0;

		if (n) {
			memcpy(o, u + i, n);
			o += n;
			i += n;
		} else if (!u[i]) {
			*o++ = '?';
			i++;
		} else {
			*o++ = (char)(0xc0 | (u[i] >> 6));
			*o++ = (char)(0x80 | (u[i] & 0x3f));
			i++;
		}
	}
	*o = '\0';
	if (out_len)
		*out_len = (size_t)(o - out);
	return out;
}
