/*
 * The library's end of the channel to kscope op (proto.h): finding it in
 * KSCOPE_OP_CHANNEL, hello and config at load, then messages and
 * request/reply pairs from any thread, one at a time under chan_lock.
 *
 * The two 64 KiB messages (outgoing, incoming) are allocated once at load
 * and reused under the lock, so no program thread's stack holds them.
 *
 * The first failure to send or receive means kscope is gone: the channel
 * is closed and the runtime turns off, so the program carries on
 * unprofiled.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oprt_int.h"

/* Moves fd far from the low numbers the program expects open() and dup()
 * to return, so that a program that dup2()s onto a fixed low number does
 * not replace the channel with one of its files. */
static int fd_high(int fd)
{
	struct rlimit rl;
	int base, nfd;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64)
		base = 3;
	else
		base = rl.rlim_cur >= 2048 ? 1000 : (int)(rl.rlim_cur / 2);
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (nfd < 0) {
		/* No high number free: keep fd, close-on-exec. */
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
			return -errno;
		return fd;
	}
	close(fd);
	return nfd;
}

/* Parses "<fd>:<32 hex digits>". */
static int channel_env_parse(const char *v, int *fd, char *token, struct ks_err *err)
{
	const char *colon = strchr(v, ':');
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (!colon || end != colon || v[0] < '0' || v[0] > '9' || errno || n < 0 ||
	    n > 1000000)
		return ks_err_set(err, -EINVAL, "%s=%s: expected <fd>:<token>",
				  KS_OP_CHANNEL_ENV, v);
	if (strlen(colon + 1) != KS_OP_TOKEN_LEN ||
	    strspn(colon + 1, "0123456789abcdefABCDEF") != KS_OP_TOKEN_LEN)
		return ks_err_set(err, -EINVAL, "%s: the token is not %d hex digits",
				  KS_OP_CHANNEL_ENV, KS_OP_TOKEN_LEN);
	memcpy(token, colon + 1, KS_OP_TOKEN_LEN + 1);
	*fd = (int)n;
	return 0;
}

int ks_oprt_chan_open(struct ks_err *err)
{
	const char *v = getenv(KS_OP_CHANNEL_ENV);
	const char *run = getenv(KS_OP_RUN_ENV);
	char token[KS_OP_TOKEN_LEN + 1];
	struct stat st;
	int fd = -1, type = 0, rc;
	socklen_t len = sizeof(type);

	if (!v)
		return ks_err_set(err, -ENOENT, "%s is not set", KS_OP_CHANNEL_ENV);
	rc = channel_env_parse(v, &fd, token, err);
	/* Children and exec'd images must not find the channel. */
	unsetenv(KS_OP_CHANNEL_ENV);
	if (rc)
		return rc;
	/* The descriptor must be kscope's socket; anything else is the
	 * program's and is left alone. */
	if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
		return ks_err_set(err, -ENOTSOCK, "descriptor %d is not a SOCK_SEQPACKET socket",
				  fd);
	fd = fd_high(fd);
	if (fd < 0)
		return ks_err_set(err, fd, "fcntl on the channel: %s", strerror(-fd));
	ks_oprt.out = malloc(sizeof(*ks_oprt.out));
	ks_oprt.in = malloc(sizeof(*ks_oprt.in));
	if (!ks_oprt.out || !ks_oprt.in) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	ks_oprt.fd = fd;
	if (run) {
		char *end;
		unsigned long r;

		errno = 0;
		r = strtoul(run, &end, 10);
		if (!errno && *end == '\0' && run[0] >= '0' && run[0] <= '9' && r < 1000000)
			ks_oprt.run = (unsigned)r;
	}
	ks_op_msg_init(ks_oprt.out, "hello");
	ks_op_msg_addu(ks_oprt.out, "version", KS_OP_PROTO_VERSION);
	ks_op_msg_addu(ks_oprt.out, "pid", (unsigned long long)getpid());
	ks_op_msg_add(ks_oprt.out, "token", token);
	ks_op_msg_addu(ks_oprt.out, "run", ks_oprt.run);
	rc = ks_op_send(fd, ks_oprt.out);
	if (rc == 0)
		rc = ks_op_recv(fd, ks_oprt.in);
	if (rc) {
		ks_err_set(err, rc, "hello: %s", strerror(-rc));
		goto fail;
	}
	if (!ks_op_msg_is(ks_oprt.in, "config")) {
		rc = ks_err_set(err, -EPROTO, "kscope answered hello without config");
		goto fail;
	}
	return 0;
fail:
	close(fd);
	ks_oprt.fd = -1;
	free(ks_oprt.out);
	free(ks_oprt.in);
	ks_oprt.out = ks_oprt.in = NULL;
	return rc;
}

void ks_oprt_chan_close_locked(void)
{
	atomic_store(&ks_oprt_on, false);
	if (ks_oprt.fd >= 0)
		close(ks_oprt.fd);
	ks_oprt.fd = -1;
}

struct ks_op_msg *ks_oprt_chan_begin(const char *type)
{
	pthread_mutex_lock(&ks_oprt.chan_lock);
	if (ks_oprt.fd < 0) {
		pthread_mutex_unlock(&ks_oprt.chan_lock);
		return NULL;
	}
	ks_op_msg_init(ks_oprt.out, type);
	return ks_oprt.out;
}

int ks_oprt_chan_send(void)
{
	int rc = ks_op_send(ks_oprt.fd, ks_oprt.out);

	/* A message too long to send is dropped; any other failure means
	 * kscope is gone. */
	if (rc && rc != -EMSGSIZE)
		ks_oprt_chan_close_locked();
	pthread_mutex_unlock(&ks_oprt.chan_lock);
	return rc;
}

const struct ks_op_msg *ks_oprt_chan_request(void)
{
	int rc = ks_op_send(ks_oprt.fd, ks_oprt.out);

	if (rc == 0)
		rc = ks_op_recv(ks_oprt.fd, ks_oprt.in);
	if (rc) {
		if (rc != -EMSGSIZE)
			ks_oprt_chan_close_locked();
		return NULL;
	}
	return ks_oprt.in;
}

void ks_oprt_chan_end(void)
{
	pthread_mutex_unlock(&ks_oprt.chan_lock);
}
