/*
 * The channel between kscope op and libkscope-op.so in the program.
 *
 * kscope listens on an AF_UNIX SOCK_SEQPACKET socket, a file in a
 * directory of its own (mode 0700) under $TMPDIR or /tmp, and starts the
 * program with an environment that says where it is:
 *
 *     KSCOPE_OP_CHANNEL=<token>:<socket path>   token: 32 hex digits, per run
 *
 * The variable (and LD_PRELOAD) stay in the environment, so every process
 * of the program that loads the library (exec'd children: shells,
 * scripts, Python's subprocess) finds it.  Each process connects by itself,
 * on its first use of the runtime (the first intercepted accelerator call
 * or user range), so a process that never uses one costs kscope nothing;
 * a child forked without exec connects afresh the same way (oprt_main.c
 * says what it resets).  A connection starts with `hello` carrying the
 * token; kscope drops a peer whose token differs.  kscope serves every
 * connection of the run (src/cli/cmd_op.c): the launch counts
 * (--launch-skip-before-match, --launch-count) are kept by kscope for the
 * whole process tree, first asked, first counted.
 *
 * Every message is one datagram (at most KS_OP_MSG_MAX bytes) of text:
 * the message type on the first line, then `key=value` lines.  A value
 * runs to the end of its line and holds no newline; a key may repeat.
 *
 *   library -> kscope
 *     hello      version=2 pid=P ppid=Q token=T run=R
 *                (R: KSCOPE_OP_RUN, the application-replay run, 0 if unset)
 *                -> kscope answers `config`
 *     skip       the process is about to launch (or, in range replay,
 *                start a range) and config said skip=N > 0: is it among
 *                the first N of the whole program?
 *                -> kscope answers `skip more=1` (yes: let it run
 *                unexamined) or `skip more=0` (no, and no later one is:
 *                stop asking)
 *     opencl     platform=... device=... driver=...
 *                the first intercepted OpenCL call (the program uses OpenCL)
 *     kernel     name=N             a kernel name launched for the first time
 *     launch     name=N index=I gsize=X:Y:Z ordinal=K range=RANGE(optional)
 *                a launch that passed the skip, range and name filters;
 *                K: its ordinal, from 0, among all the process's launches
 *                of kernel N with global size X:Y:Z (application replay
 *                finds it again by these three in later runs);
 *                -> kscope answers `collect` or `pass`
 *     progress   dir=D done=K total=T       replay passes done
 *     collected  dir=D status=ok|failed [message=...]
 *                the raw files of one collected launch or range are in D
 *     timing     target=N,X:Y:Z,K ns=NS     application replay, run >= 1:
 *                the measured event time of one target launch
 *     bye        the program is exiting
 *
 *   kscope -> library
 *     config     mode=kernel|application|range skip=N warmup=N passes=N
 *                flush=0|1 mstx=0|1 kernel_name=PAT (absent: all)
 *                mstx_include=PAT (absent: all) dir=ABS
 *                targets=FILE (application runs >= 1: a file of lines
 *                NAME,X:Y:Z,K, each the K-th launch, counted from 0, of
 *                kernel NAME with global size X:Y:Z, to time in this run)
 *     collect    dir=REL            collect this launch into ABS/REL
 *                                   (REL is "<pid>/<kernel>_<index>")
 *     pass       final=0|1          do not collect; final=1: nothing more
 *                                   will be collected, stop asking
 *
 * If a send or receive fails (kscope is gone), the library stops using the
 * channel and lets the program carry on unprofiled.
 *
 * This file is compiled into both the kscope executable and the preloaded
 * library, so it calls only libc.
 */
#ifndef KS_OP_PROTO_H
#define KS_OP_PROTO_H

#include <stdbool.h>
#include <stddef.h>

/* 2: one connection per process (socket file), `skip`, hello's ppid. */
#define KS_OP_PROTO_VERSION 2
#define KS_OP_MSG_MAX 65536
#define KS_OP_CHANNEL_ENV "KSCOPE_OP_CHANNEL"
#define KS_OP_RUN_ENV "KSCOPE_OP_RUN"
#define KS_OP_TOKEN_LEN 32

/* A message being built or parsed (64 KiB: allocate it, do not put it on
 * a program thread's stack). */
struct ks_op_msg {
	size_t len;                 /* bytes used in buf */
	bool overflow;              /* an add did not fit: the message is unusable */
	char buf[KS_OP_MSG_MAX + 1]; /* NUL-terminated text */
};

/* Starts a message of type (a word). */
void ks_op_msg_init(struct ks_op_msg *m, const char *type);
/* Appends key=value; newlines in value are replaced by spaces. */
void ks_op_msg_add(struct ks_op_msg *m, const char *key, const char *value);
void ks_op_msg_addf(struct ks_op_msg *m, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ks_op_msg_addu(struct ks_op_msg *m, const char *key, unsigned long long v);

/* Sends m as one datagram (MSG_NOSIGNAL).  0, or -errno (-EMSGSIZE after
 * an overflow). */
int ks_op_send(int fd, const struct ks_op_msg *m);
/* Receives one datagram into m, retrying on EINTR.  0, -ECONNRESET when
 * the peer is gone, -EBADMSG for an empty, truncated or non-text message,
 * or -errno. */
int ks_op_recv(int fd, struct ks_op_msg *m);

/* The message's type: its first line, copied into type (size bytes). */
void ks_op_msg_type(const struct ks_op_msg *m, char *type, size_t size);
bool ks_op_msg_is(const struct ks_op_msg *m, const char *type);
/* The value of the first key=value line after *pos whose key is key, or
 * NULL; with pos NULL, of the first such line.  The value is copied into
 * val (size bytes, truncated).  *pos is advanced past the line found, so
 * repeated keys are read in a loop. */
const char *ks_op_msg_get(const struct ks_op_msg *m, const char *key, size_t *pos,
			  char *val, size_t size);
/* The value of key as an unsigned integer; def when absent or not a
 * decimal number. */
unsigned long long ks_op_msg_getu(const struct ks_op_msg *m, const char *key,
				  unsigned long long def);

#endif
