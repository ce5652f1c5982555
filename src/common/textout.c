/*
 * Buffered text output with the CSV and JSON escaping of kscope's
 * deliverables (textout.h).
 */
#include "textout.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* ------------------------------------------------------------------ */
/* The buffer                                                          */
/* ------------------------------------------------------------------ */

int ks_text_open(struct ks_text *t, ks_text_sink_fn sink, void *ctx)
{
	memset(t, 0, sizeof(*t));
	t->sink = sink;
	t->ctx = ctx;
	t->buf = malloc(KS_TEXT_BUF_SIZE);
	if (!t->buf) {
		t->error = -ENOMEM;
		return -ENOMEM;
	}
	return 0;
}

static int outfile_sink(void *ctx, const void *buf, size_t len)
{
	return ks_outfile_write(ctx, buf, len);
}

int ks_text_open_outfile(struct ks_text *t, struct ks_outfile *of)
{
	return ks_text_open(t, outfile_sink, of);
}

int ks_text_flush(struct ks_text *t)
{
	if (t->len && !t->error)
		t->error = t->sink(t->ctx, t->buf, t->len);
	t->len = 0;
	return t->error;
}

int ks_text_close(struct ks_text *t)
{
	int rc = t->buf ? ks_text_flush(t) : t->error;

	free(t->buf);
	t->buf = NULL;
	return rc;
}

void ks_text_put(struct ks_text *t, const void *s, size_t n)
{
	const char *p = s;

	if (t->error || !t->buf)
		return;
	while (n > 0) {
		size_t room = KS_TEXT_BUF_SIZE - t->len, k = n < room ? n : room;

		memcpy(t->buf + t->len, p, k);
		t->len += k;
		p += k;
		n -= k;
		if (t->len == KS_TEXT_BUF_SIZE && ks_text_flush(t))
			return;
	}
}

void ks_text_puts(struct ks_text *t, const char *s)
{
	ks_text_put(t, s, strlen(s));
}

void ks_text_printf(struct ks_text *t, const char *fmt, ...)
{
	char small[256], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		ks_text_put(t, small, (size_t)n);
		return;
	}
	big = malloc((size_t)n + 1);
	if (!big) {
		if (!t->error)
			t->error = -ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	ks_text_put(t, big, (size_t)n);
	free(big);
}

void ks_text_u64(struct ks_text *t, uint64_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	ks_text_put(t, p, (size_t)(tmp + sizeof(tmp) - p));
}

void ks_text_i64(struct ks_text *t, int64_t v)
{
	if (v < 0) {
		ks_text_put(t, "-", 1);
		ks_text_u64(t, -(uint64_t)v);
	} else {
		ks_text_u64(t, (uint64_t)v);
	}
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */
/* ------------------------------------------------------------------ */

void ks_text_json_str(struct ks_text *t, const char *s)
{
	const unsigned char *u = (const unsigned char *)s, *run = u;

	ks_text_put(t, "\"", 1);
	while (*u) {
		size_t n = ks_utf8_len(u, SIZE_MAX);
		const char *esc = NULL;
		char hex[8];

		if (n > 1) {
			u += n;
			continue;
		}
		if (n == 1 && *u >= 0x20 && *u != '"' && *u != '\\') {
			u++;
			continue;
		}
		ks_text_put(t, run, (size_t)(u - run));
		switch (*u) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\t': esc = "\\t"; break;
		case '\r': esc = "\\r"; break;
		default:
			snprintf(hex, sizeof(hex), "\\u%04x", *u);
			esc = hex;
			break;
		}
		ks_text_puts(t, esc);
		run = ++u;
	}
	ks_text_put(t, run, (size_t)(u - run));
	ks_text_put(t, "\"", 1);
}

/* "%.*f" of a finite v, byte for byte as printf writes it, without
 * printf (which large deliverables spend most of their time in) where
 * the rounding cannot be in doubt: v x 10^prec below 2^40 is computed
 * within 2^-13 of the exact product, so a fraction of it kept 1e-3 away
 * from one half rounds as printf rounds the exact value.  Other values go
 * to printf. */
static void put_fixed(struct ks_text *t, double v, int prec)
{
	static const uint64_t p10[] = {
		1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
		1000000000,
	};
	double a = fabs(v), sc, whole, frac;
	char buf[48], *end = buf + sizeof(buf), *p = end;
	uint64_t n, ip, fp;

	if (prec < 0 || prec > 9 || !((sc = a * (double)p10[prec]) < 1099511627776.0)) {
		ks_text_printf(t, "%.*f", prec, v);
		return;
	}
	whole = floor(sc);
	frac = sc - whole;
	if (fabs(frac - 0.5) < 1e-3) {
		ks_text_printf(t, "%.*f", prec, v);
		return;
	}
	n = (uint64_t)whole + (frac > 0.5);
	ip = n / p10[prec];
	fp = n % p10[prec];
	for (int i = 0; i < prec; i++, fp /= 10)
		*--p = (char)('0' + fp % 10);
	if (prec > 0)
		*--p = '.';
	do
		*--p = (char)('0' + ip % 10);
	while ((ip /= 10) != 0);
	if (v < 0)
		*--p = '-';
	ks_text_put(t, p, (size_t)(end - p));
}

void ks_text_json_num(struct ks_text *t, double v, int prec)
{
	if (!isfinite(v)) {
		ks_text_puts(t, "null");
		return;
	}
	if (v == 0)
		v = 0; /* no "-0.000" */
	put_fixed(t, v, prec);
}

/* ------------------------------------------------------------------ */
/* CSV                                                                 */
/* ------------------------------------------------------------------ */

void ks_csv_str(struct ks_text *t, bool first, const char *s)
{
	const char *p, *run;

	if (!first)
		ks_text_put(t, ",", 1);
	if (!strpbrk(s, ",\"\r\n")) {
		ks_text_puts(t, s);
		return;
	}
	ks_text_put(t, "\"", 1);
	for (p = run = s; *p; p++)
		if (*p == '"') {
			ks_text_put(t, run, (size_t)(p - run + 1));
			ks_text_put(t, "\"", 1);
			run = p + 1;
		}
	ks_text_put(t, run, (size_t)(p - run));
	ks_text_put(t, "\"", 1);
}

void ks_csv_num(struct ks_text *t, double v, int prec)
{
	ks_text_put(t, ",", 1);
	if (isfinite(v))
		put_fixed(t, v == 0 ? 0.0 : v, prec);
}

void ks_csv_int(struct ks_text *t, long long v)
{
	ks_text_put(t, ",", 1);
	if (v >= 0)
		ks_text_u64(t, (uint64_t)v);
}

void ks_csv_u64(struct ks_text *t, uint64_t v)
{
	ks_text_put(t, ",", 1);
	ks_text_u64(t, v);
}

void ks_csv_end(struct ks_text *t)
{
	ks_text_put(t, "\n", 1);
}
