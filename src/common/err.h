/*
 * The error record that kscope's library code hands back to its callers.
 *
 * Library functions never print to the user and never exit (docs/STYLE):
 * they return 0 or a negative errno-style code and, on failure, fill a
 * struct ks_err with a complete one-line message.  Only the cmd_*.c files
 * decide what the user sees and which exit status follows.
 */
#ifndef KS_ERR_H
#define KS_ERR_H

#include <stddef.h>

#define KS_ERR_MSG_MAX 1024

struct ks_err {
	int code;                  /* negative errno-style code, 0 if none */
	char msg[KS_ERR_MSG_MAX];  /* one line, no trailing newline */
};

/* Records code and a printf-style message in err (err may be NULL) and
 * returns code, so callers can write `return ks_err_set(err, -EINVAL, ...)`.
 * Control characters in the message (a newline a parser quotes from its
 * input) become spaces, so the message stays one line. */
int ks_err_set(struct ks_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Empties err. */
void ks_err_clear(struct ks_err *err);

#endif
