/*
 * The library's end of the channel to kscope op (proto.h): its address in
 * KSCOPE_OP_CHANNEL, read at load; the connection, hello and config on
 * the process's first use of the runtime (oprt_main.c); then messages and
 * request/reply pairs from any thread, one at a time under chan_lock.
 *
 * The two 64 KiB messages (outgoing, incoming) are allocated once, at the
 * first connection, and reused under the lock (a forked child keeps its
 * copies), so no program thread's stack holds them.
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
#include <sys/un.h>
#include <unistd.h>

#include "oprt_int.h"

/* Moves fd far from the low numbers the program expects open() and dup()
 * to return, so that a program that dup2()s onto a fixed low number does
 * not replace the channel with one of its files. */
static int fd_base(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64)
		return 3;
	return rl.rlim_cur >= 2048 ? 1000 : (int)(rl.rlim_cur / 2);
}

static int fd_high(int fd)
{
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, fd_base());

	if (nfd < 0) {
		/* No high number free: keep fd, close-on-exec. */
		if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
			return -errno;
		return fd;
	}
	close(fd);
	return nfd;
}

/* Parses "<32 hex digits>:<absolute socket path>" into ks_oprt.token and
 * ks_oprt.addr. */
static int channel_env_parse(const char *v, struct ks_err *err)
{
	const char *path = v + KS_OP_TOKEN_LEN + 1;

	if (strlen(v) <= KS_OP_TOKEN_LEN + 1 || v[KS_OP_TOKEN_LEN] != ':' ||
	    strspn(v, "0123456789abcdefABCDEF") != KS_OP_TOKEN_LEN)
		return ks_err_set(err, -EINVAL, "%s=%s: expected <%d hex digits>:<socket path>",
				  KS_OP_CHANNEL_ENV, v, KS_OP_TOKEN_LEN);
	if (path[0] != '/' || strlen(path) >= sizeof(ks_oprt.addr.sun_path))
		return ks_err_set(err, -EINVAL, "%s: the socket path is not absolute or too long",
				  KS_OP_CHANNEL_ENV);
	memcpy(ks_oprt.token, v, KS_OP_TOKEN_LEN);
	ks_oprt.token[KS_OP_TOKEN_LEN] = '\0';
	memset(&ks_oprt.addr, 0, sizeof(ks_oprt.addr));
	ks_oprt.addr.sun_family = AF_UNIX;
	memcpy(ks_oprt.addr.sun_path, path, strlen(path) + 1);
	return 0;
}

/* A process's descriptor table grows and never shrinks.  Grown to
 * fd_base() here, at load, while the process has one thread, the
 * F_DUPFD of fd_high() at the first connection (after the program's
 * runtime has started its threads) finds the room: growing a table that
 * several threads share waits for an RCU grace period, some 10 ms of a
 * short program's run. */
static void fd_table_grow(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), nfd;

	if (fd < 0)
		return;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, fd_base());
	if (nfd >= 0)
		close(nfd);
	close(fd);
}

int ks_oprt_chan_setup(struct ks_err *err)
{
	const char *v = getenv(KS_OP_CHANNEL_ENV);
	const char *run = getenv(KS_OP_RUN_ENV);
	int rc;

	/* The variable stays: the program's exec'd children need it. */
	if (!v)
		return ks_err_set(err, -ENOENT, "%s is not set", KS_OP_CHANNEL_ENV);
	rc = channel_env_parse(v, err);
	if (rc)
		return rc;
	fd_table_grow();
	if (run) {
		char *end;
		unsigned long r;

		errno = 0;
		r = strtoul(run, &end, 10);
		if (!errno && *end == '\0' && run[0] >= '0' && run[0] <= '9' && r < 1000000)
			ks_oprt.run = (unsigned)r;
	}
	return 0;
}

int ks_oprt_chan_connect(struct ks_err *err)
{
	int fd, rc;

	if (!ks_oprt.out)
		ks_oprt.out = malloc(sizeof(*ks_oprt.out));
	if (!ks_oprt.in)
		ks_oprt.in = malloc(sizeof(*ks_oprt.in));
	if (!ks_oprt.out || !ks_oprt.in)
		return ks_err_set(err, -ENOMEM, "out of memory");
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ks_err_set(err, -errno, "socket: %s", strerror(errno));
	do
		rc = connect(fd, (const struct sockaddr *)&ks_oprt.addr, sizeof(ks_oprt.addr));
	while (rc != 0 && errno == EINTR);
	if (rc != 0) {
		rc = ks_err_set(err, -errno, "connecting to %s: %s", ks_oprt.addr.sun_path,
				strerror(errno));
		close(fd);
		return rc;
	}
	fd = fd_high(fd);
	if (fd < 0)
		return ks_err_set(err, fd, "fcntl on the channel: %s", strerror(-fd));
	ks_op_msg_init(ks_oprt.out, "hello");
	ks_op_msg_addu(ks_oprt.out, "version", KS_OP_PROTO_VERSION);
	ks_op_msg_addu(ks_oprt.out, "pid", (unsigned long long)getpid());
	ks_op_msg_addu(ks_oprt.out, "ppid", (unsigned long long)getppid());
	ks_op_msg_add(ks_oprt.out, "token", ks_oprt.token);
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
	ks_oprt.fd = fd;
	return 0;
fail:
	close(fd);
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
