/*
 * view_http.h: kscope view's embedded web server (private to src/view and
 * the view command).
 *
 * The server answers the JSON API of view.h over POST /api and a WebSocket
 * at /ws, and serves the page's files from one directory, by a list of the
 * files found there when the server starts: no other file is ever served.
 * It runs on civetweb's worker threads; the view is only read.
 */
#ifndef KS_VIEW_HTTP_H
#define KS_VIEW_HTTP_H

#include "err.h"
#include "view.h"

struct ks_view_server;

/* The longest token accepted. */
#define KS_VIEW_TOKEN_MAX 128

/* Starts serving v (which must outlive the server) on host:port (an IPv4
 * address; port 0 picks a free port) with the page's files from page_dir.
 * token: every request must carry it (cookie kscope_view_<port>, set by
 * GET /?token=TOKEN, or "Authorization: Bearer TOKEN"); NULL or "": none
 * asked (the caller allows that on a loopback address only).  Returns 0
 * with *out set, or a negative errno-style code with err saying what went
 * wrong (-EADDRINUSE: the port is taken). */
int ks_view_serve_start(const struct ks_view *v, const char *host, int port,
			const char *page_dir, const char *token, struct ks_view_server **out,
			struct ks_err *err);
/* The port the server listens on (the one picked when 0 was asked). */
int ks_view_server_port(const struct ks_view_server *s);
/* How many page files are served. */
size_t ks_view_server_files(const struct ks_view_server *s);
/* Stops the server (waits for its threads) and frees it.  NULL is fine. */
void ks_view_server_stop(struct ks_view_server *s);

/* True if host (an IPv4 address text) is a loopback address. */
bool ks_view_host_is_loopback(const char *host);

#endif
