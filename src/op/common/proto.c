/*
 * The kscope op channel's messages: building, sending, receiving and
 * reading them (proto.h).  libc only: compiled into libkscope-op.so too.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proto.h"

static void put(struct ks_op_msg *m, const char *s, size_t n, bool clean)
{
	if (m->overflow || m->len + n > KS_OP_MSG_MAX) {
		m->overflow = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		m->buf[m->len++] = clean && (c == '\n' || c == '\r') ? ' ' : c;
	}
	m->buf[m->len] = '\0';
}

void ks_op_msg_init(struct ks_op_msg *m, const char *type)
{
	m->len = 0;
	m->overflow = false;
	m->buf[0] = '\0';
	put(m, type, strlen(type), true);
	put(m, "\n", 1, false);
}

void ks_op_msg_add(struct ks_op_msg *m, const char *key, const char *value)
{
	put(m, key, strlen(key), true);
	put(m, "=", 1, false);
	put(m, value, strlen(value), true);
	put(m, "\n", 1, false);
}

void ks_op_msg_addf(struct ks_op_msg *m, const char *key, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	ks_op_msg_add(m, key, tmp);
}

void ks_op_msg_addu(struct ks_op_msg *m, const char *key, unsigned long long v)
{
	ks_op_msg_addf(m, key, "%llu", v);
}

int ks_op_send(int fd, const struct ks_op_msg *m)
{
	ssize_t n;

	if (m->overflow)
		return -EMSGSIZE;
	do
		n = send(fd, m->buf, m->len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EPIPE ? -ECONNRESET : -errno;
	return (size_t)n == m->len ? 0 : -EIO;
}

int ks_op_recv(int fd, struct ks_op_msg *m)
{
	struct iovec iov = { m->buf, KS_OP_MSG_MAX };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	m->len = 0;
	m->overflow = false;
	m->buf[0] = '\0';
	do
		n = recvmsg(fd, &mh, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -ECONNRESET : -errno;
	if (n == 0)
		return -ECONNRESET;
	if (mh.msg_flags & MSG_TRUNC)
		return -EBADMSG;
	if (memchr(m->buf, '\0', (size_t)n) || !memchr(m->buf, '\n', (size_t)n))
		return -EBADMSG;
	m->len = (size_t)n;
	m->buf[n] = '\0';
	return 0;
}

void ks_op_msg_type(const struct ks_op_msg *m, char *type, size_t size)
{
	const char *nl = strchr(m->buf, '\n');
	size_t n = nl ? (size_t)(nl - m->buf) : m->len;

	if (size == 0)
		return;
	if (n >= size)
		n = size - 1;
	memcpy(type, m->buf, n);
	type[n] = '\0';
}

bool ks_op_msg_is(const struct ks_op_msg *m, const char *type)
{
	size_t n = strlen(type);

	return strncmp(m->buf, type, n) == 0 && m->buf[n] == '\n';
}

const char *ks_op_msg_get(const struct ks_op_msg *m, const char *key, size_t *pos,
			  char *val, size_t size)
{
	size_t klen = strlen(key);
	const char *p = strchr(m->buf, '\n');

	if (!p)
		return NULL;
	p++;
	if (pos && *pos > (size_t)(p - m->buf))
		p = m->buf + *pos;
	while (*p) {
		const char *nl = strchr(p, '\n');
		const char *end = nl ? nl : p + strlen(p);

		if ((size_t)(end - p) > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
			size_t vlen = (size_t)(end - p) - klen - 1;

			if (size) {
				if (vlen >= size)
					vlen = size - 1;
				memcpy(val, p + klen + 1, vlen);
				val[vlen] = '\0';
			}
			if (pos)
				*pos = (size_t)(end - m->buf) + (nl ? 1 : 0);
			return val;
		}
		p = nl ? nl + 1 : end;
	}
	return NULL;
}

unsigned long long ks_op_msg_getu(const struct ks_op_msg *m, const char *key,
				  unsigned long long def)
{
	char v[32], *end;
	unsigned long long u;

	if (!ks_op_msg_get(m, key, NULL, v, sizeof(v)) || v[0] < '0' || v[0] > '9')
		return def;
	errno = 0;
	u = strtoull(v, &end, 10);
	return errno || *end ? def : u;
}
