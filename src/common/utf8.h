/*
 * UTF-8 for kscope's outputs: JSON, Perfetto and the viewer's answers need
 * valid UTF-8, and the names taken from a program (paths, arguments,
 * symbols) need not be.  One validator (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF) and one repair: each byte that is
 * not part of valid UTF-8 becomes the character with its value (U+0080
 * to U+00FF, as if the text were Latin-1), so "caf\xe9" reads "café".
 */
#ifndef KS_UTF8_H
#define KS_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 if none starts
 * there or it would run past left bytes.  It reads no further than the
 * first byte that fails, so a NUL-terminated string may pass SIZE_MAX. */
size_t ks_utf8_len(const unsigned char *s, size_t left);
/* Whether the len bytes at s are valid UTF-8 with no NUL. */
bool ks_utf8_valid(const char *s, size_t len);
/* A malloc'd, NUL-terminated copy of the len bytes at s with each byte
 * that is not part of valid UTF-8 replaced by the character with its
 * value, and each NUL by '?'; its length in *out_len if not NULL.  NULL
 * when out of memory. */
char *ks_utf8_fix(const char *s, size_t len, size_t *out_len);

#endif
