/*
 * JSON text for the raw files (oprt.h): written by hand rather than with a
 * library because the runtime is preloaded into arbitrary programs and
 * should bring no library of its own into them (jansson in the program
 * could clash with the program's own copy).  The writer is small: values
 * into a growing buffer, strings escaped and made valid UTF-8, objects one
 * member per line, arrays of numbers on one line.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oprt.h"

void ks_oprt_json_init(struct ks_oprt_json *j)
{
	memset(j, 0, sizeof(*j));
	j->depth = -1;
}

void ks_oprt_json_free(struct ks_oprt_json *j)
{
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
}

static void put(struct ks_oprt_json *j, const char *s, size_t n)
{
	if (j->bad)
		return;
	if (j->len + n + 1 > j->cap) {
		size_t cap = j->cap ? j->cap : 4096;
		char *b;

		while (j->len + n + 1 > cap)
			cap *= 2;
		b = realloc(j->buf, cap);
		if (!b) {
			j->bad = true;
			return;
		}
		j->buf = b;
		j->cap = cap;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void puts_(struct ks_oprt_json *j, const char *s)
{
	put(j, s, strlen(s));
}

static void indent(struct ks_oprt_json *j, int depth)
{
	put(j, "\n", 1);
	for (int i = 0; i < depth; i++)
		put(j, "  ", 2);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static void put_string(struct ks_oprt_json *j, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	put(j, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		char esc[8];
		size_t len;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			put(j, esc, 2);
			i++;
		} else if (c < 0x20) {
			if (c == '\n')
				puts_(j, "\\n");
			else if (c == '\t')
				puts_(j, "\\t");
			else if (c == '\r')
				puts_(j, "\\r");
			else {
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				puts_(j, esc);
			}
			i++;
		} else if ((len = utf8_len(s + i, n - i)) > 0) {
			put(j, str + i, len);
			i += len;
		} else {
			puts_(j, "\\ufffd");
			i++;
		}
	}
	put(j, "\"", 1);
}

/* Starts a value: the separator, the layout and the key. */
static void value_begin(struct ks_oprt_json *j, const char *key, bool container)
{
	if (j->depth < 0) {
		if (j->len)
			j->bad = true;    /* a second top-level value */
		return;
	}
	if (j->level[j->depth].array == (key != NULL)) {
		j->bad = true;            /* a key in an array, or none in an object */
		return;
	}
	if (j->level[j->depth].n++)
		put(j, ",", 1);
	if (!j->level[j->depth].array || container) {
		j->level[j->depth].multiline = true;
		indent(j, j->depth + 1);
	} else if (j->level[j->depth].n > 1) {
		put(j, " ", 1);
	}
	if (key) {
		put_string(j, key, strlen(key));
		put(j, ": ", 2);
	}
}

static void open_(struct ks_oprt_json *j, const char *key, bool array)
{
	value_begin(j, key, true);
	if (j->depth + 1 >= KS_OPRT_JSON_DEPTH) {
		j->bad = true;
		return;
	}
	j->depth++;
	j->level[j->depth].array = array;
	j->level[j->depth].multiline = false;
	j->level[j->depth].n = 0;
	put(j, array ? "[" : "{", 1);
}

static void close_(struct ks_oprt_json *j, bool array)
{
	if (j->depth < 0 || j->level[j->depth].array != array) {
		j->bad = true;
		return;
	}
	if (j->level[j->depth].multiline)
		indent(j, j->depth);
	put(j, array ? "]" : "}", 1);
	if (--j->depth < 0)
		put(j, "\n", 1);
}

void ks_oprt_json_obj_open(struct ks_oprt_json *j, const char *key)
{
	open_(j, key, false);
}

void ks_oprt_json_obj_close(struct ks_oprt_json *j)
{
	close_(j, false);
}

void ks_oprt_json_arr_open(struct ks_oprt_json *j, const char *key)
{
	open_(j, key, true);
}

void ks_oprt_json_arr_close(struct ks_oprt_json *j)
{
	close_(j, true);
}

void ks_oprt_json_strn(struct ks_oprt_json *j, const char *key, const char *s, size_t len)
{
	value_begin(j, key, false);
	put_string(j, s, len);
}

void ks_oprt_json_str(struct ks_oprt_json *j, const char *key, const char *s)
{
	if (!s) {
		ks_oprt_json_null(j, key);
		return;
	}
	ks_oprt_json_strn(j, key, s, strlen(s));
}

void ks_oprt_json_u64(struct ks_oprt_json *j, const char *key, uint64_t v)
{
	char b[32];

	value_begin(j, key, false);
	snprintf(b, sizeof(b), "%" PRIu64, v);
	puts_(j, b);
}

void ks_oprt_json_i64(struct ks_oprt_json *j, const char *key, int64_t v)
{
	char b[32];

	value_begin(j, key, false);
	snprintf(b, sizeof(b), "%" PRId64, v);
	puts_(j, b);
}

void ks_oprt_json_num(struct ks_oprt_json *j, const char *key, double v)
{
	char b[40];

	if (!isfinite(v)) {
		ks_oprt_json_null(j, key);
		return;
	}
	value_begin(j, key, false);
	/* %.17g round-trips a double; integers print without a dot. */
	snprintf(b, sizeof(b), "%.17g", v);
	puts_(j, b);
}

void ks_oprt_json_bool(struct ks_oprt_json *j, const char *key, bool v)
{
	value_begin(j, key, false);
	puts_(j, v ? "true" : "false");
}

void ks_oprt_json_null(struct ks_oprt_json *j, const char *key)
{
	value_begin(j, key, false);
	puts_(j, "null");
}
