/*
 * view_http.c: kscope view's web server on civetweb.
 *
 * Three things are served, and nothing else:
 *
 *   POST /api   one JSON request per body -> ks_view_request's response
 *   /ws         a WebSocket: each text message a request, each answer a
 *               text message
 *   the page    the files found in the page directory when the server
 *               started (a list built once; civetweb's own file serving is
 *               never enabled, no document_root is set)
 *
 * Every request goes through begin_request, which checks the Host header
 * (a page from another site that a DNS name rebound to this machine must
 * not read the results: on every address, Host must be one of this
 * machine's names or addresses), the Origin header (a page from another
 * site must not use the API or the WebSocket) and the run's secret token
 * (another user of the machine must not read anything: the token comes in
 * the cookie the page got by opening the printed URL, or in an
 * "Authorization: Bearer" header), then answers it or, for a WebSocket
 * upgrade of /ws, lets civetweb do the handshake.  GET /?token=TOKEN sets
 * the cookie (HttpOnly, SameSite=Strict) and sends the browser on to the
 * same page without the token in its address.  Bodies are read with a
 * hard limit (KS_VIEW_MAX_REQUEST), whether their length is given or they
 * come in chunks.  The view is never written, so the worker threads share
 * it without locks; the only state per connection is a WebSocket's
 * partial message.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dlfcn.h>

#include <civetweb.h>

#include "readfile.h"
#include "view_http.h"

/* civetweb is opened with dlopen() when a server starts, rather than
 * linked into kscope: loading it costs every start of every kscope
 * command about 0.2 ms (docs/performance.md), which `kscope op` adds to
 * the program it runs.  Its soname is that of civetweb 1.x. */
#define CIVETWEB_SONAME "libcivetweb.so.1"
#define KS_CIVETWEB_FUNCS(X)                                                 \
	X(mg_check_feature) X(mg_disable_connection_keep_alive)              \
	X(mg_exit_library) X(mg_get_context) X(mg_get_header)                \
	X(mg_get_request_info) X(mg_get_server_ports)                        \
	X(mg_get_user_connection_data) X(mg_get_user_data)                   \
	X(mg_init_library) X(mg_printf) X(mg_read)                           \
	X(mg_set_user_connection_data) X(mg_set_websocket_handler)           \
	X(mg_start2) X(mg_stop) X(mg_websocket_write) X(mg_write)

static struct {
#define CW_PTR(f) __typeof__(f) *p_##f;
	KS_CIVETWEB_FUNCS(CW_PTR)
#undef CW_PTR
} cw;

/* From here on each mg_ function is called through the pointer loaded. */
#define mg_check_feature (*cw.p_mg_check_feature)
#define mg_disable_connection_keep_alive (*cw.p_mg_disable_connection_keep_alive)
#define mg_exit_library (*cw.p_mg_exit_library)
#define mg_get_context (*cw.p_mg_get_context)
#define mg_get_header (*cw.p_mg_get_header)
#define mg_get_request_info (*cw.p_mg_get_request_info)
#define mg_get_server_ports (*cw.p_mg_get_server_ports)
#define mg_get_user_connection_data (*cw.p_mg_get_user_connection_data)
#define mg_get_user_data (*cw.p_mg_get_user_data)
#define mg_init_library (*cw.p_mg_init_library)
#define mg_printf (*cw.p_mg_printf)
#define mg_read (*cw.p_mg_read)
#define mg_set_user_connection_data (*cw.p_mg_set_user_connection_data)
#define mg_set_websocket_handler (*cw.p_mg_set_websocket_handler)
#define mg_start2 (*cw.p_mg_start2)
#define mg_stop (*cw.p_mg_stop)
#define mg_websocket_write (*cw.p_mg_websocket_write)
#define mg_write (*cw.p_mg_write)

/* Loads civetweb the first time (it stays loaded: servers may be started
 * and stopped several times, by one thread).  0, or -ENOENT with err set
 * naming what is missing. */
static int civetweb_load(struct ks_err *err)
{
	static void *lib;
	const char *why;
	void *h;

	if (lib)
		return 0;
	h = dlopen(CIVETWEB_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		why = dlerror();
		return ks_err_set(err, -ENOENT, "cannot load civetweb (%s), which kscope "
				  "view serves with: %s; install it (scripts/install-deps.sh)",
				  CIVETWEB_SONAME, why ? why : "not found");
	}
	/* The casts go through void * as POSIX's dlsym() wants. */
#define CW_SYM(f)                                                          \
	if (!(*(void **)&cw.p_##f = dlsym(h, #f))) {                       \
		dlclose(h);                                                \
		return ks_err_set(err, -ENOENT, "%s has no %s, which kscope " \
				  "view calls", CIVETWEB_SONAME, #f);      \
	}
	KS_CIVETWEB_FUNCS(CW_SYM)
#undef CW_SYM
	lib = h;
	return 0;
}

/* Worker threads: a browser opens up to six connections to a server and
 * an open WebSocket keeps one worker for itself; a connection that sends
 * its headers slowly keeps one too, until HTTP_TIMEOUT_MS passes without
 * a byte.  64 leave room for many such connections (a few browser tabs, a
 * script gone wrong) before an API call has to wait. */
#define HTTP_THREADS "64"
#define HTTP_TIMEOUT_MS "5000"
/* Host values accepted: 127.0.0.1, localhost, [::1], the listening
 * address, the machine's name and full name, each of its IPv4 addresses. */
#define MAX_HOSTS 40
/* The page's files: how many, how deep, how large. */
#define PAGE_MAX_FILES 2000
#define PAGE_MAX_DEPTH 6
#define PAGE_MAX_FILE (64ll << 20)

/* Headers every answer carries.  The page is made of its own files only:
 * no inline script or style, nothing from elsewhere. */
#define SECURITY_HEADERS                                                     \
	"X-Content-Type-Options: nosniff\r\n"                                \
	"Content-Security-Policy: default-src 'self'; script-src 'self'; "   \
	"style-src 'self'; img-src 'self' data:; font-src 'self'; "          \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; "           \
	"form-action 'none'; frame-ancestors 'none'\r\n"                     \
	"Referrer-Policy: no-referrer\r\n"                                   \
	"Cache-Control: no-store\r\n"

struct page_file {
	char *name;   /* relative to the page directory: "js/app.js" */
	char *path;   /* absolute */
	const char *type;
};

struct ks_view_server {
	struct mg_context *ctx;
	const struct ks_view *view;
	atomic_bool ready;        /* port, hosts and handlers are set */
	int port;
	struct in_addr addr;      /* where to reach the server from here */
	bool loopback;            /* bound to a loopback address */
	char hosts[MAX_HOSTS][300];   /* Host values accepted: "name:port" */
	size_t nhosts;
	char token[KS_VIEW_TOKEN_MAX + 1]; /* empty: no token asked (--no-token) */
	char cookie[32];          /* the cookie's name: kscope_view_<port> */
	struct page_file *files;  /* sorted by name */
	size_t nfiles;
};

/* A WebSocket's message being put together from fragments. */
struct ws_conn {
	char *buf;
	size_t len;
	bool open;  /* a message's first fragment came, not yet its last */
};

/* ------------------------------------------------------------------ */
/* The page's files                                                    */
/* ------------------------------------------------------------------ */

static const struct {
	const char *ext;
	const char *type;
} content_types[] = {
	{ "html", "text/html; charset=utf-8" },
	{ "htm", "text/html; charset=utf-8" },
	{ "js", "text/javascript; charset=utf-8" },
	{ "mjs", "text/javascript; charset=utf-8" },
	{ "css", "text/css; charset=utf-8" },
	{ "json", "application/json" },
	{ "map", "application/json" },
	{ "svg", "image/svg+xml" },
	{ "png", "image/png" },
	{ "jpg", "image/jpeg" },
	{ "jpeg", "image/jpeg" },
	{ "gif", "image/gif" },
	{ "webp", "image/webp" },
	{ "ico", "image/x-icon" },
	{ "woff", "font/woff" },
	{ "woff2", "font/woff2" },
	{ "ttf", "font/ttf" },
	{ "txt", "text/plain; charset=utf-8" },
	{ "wasm", "application/wasm" },
};

static const char *content_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot && !strchr(dot, '/'))
		for (size_t i = 0; i < sizeof content_types / sizeof content_types[0]; i++)
			if (strcasecmp(dot + 1, content_types[i].ext) == 0)
				return content_types[i].type;
	return "application/octet-stream";
}

/* A name the server may serve: letters, digits, '.', '_', '-', not
 * starting with '.' (no hidden files, no "." or ".."). */
static bool page_name_ok(const char *name)
{
	if (!name[0] || name[0] == '.' || strlen(name) > 200)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

static void page_files_free(struct ks_view_server *s)
{
	for (size_t i = 0; i < s->nfiles; i++) {
		free(s->files[i].name);
		free(s->files[i].path);
	}
	free(s->files);
	s->files = NULL;
	s->nfiles = 0;
}

/* Adds the regular files under dir (rel its name from the page directory,
 * "" at the top) to s->files.  Symbolic links are not followed. */
static int page_walk(struct ks_view_server *s, size_t *cap, const char *dir,
		     const char *rel, int depth, struct ks_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return ks_err_set(err, -errno, "cannot read the page directory %s: %s",
				  dir, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char path[4096], name[1024];
		struct stat st;

		if (!page_name_ok(de->d_name))
			continue;
		if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path ||
		    snprintf(name, sizeof name, "%s%s%s", rel, *rel ? "/" : "",
			     de->d_name) >= (int)sizeof name)
			continue;
		if (lstat(path, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			if (depth < PAGE_MAX_DEPTH)
				rc = page_walk(s, cap, path, name, depth + 1, err);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		if (s->nfiles >= PAGE_MAX_FILES) {
			rc = ks_err_set(err, -E2BIG, "the page directory has more than %d "
					"files", PAGE_MAX_FILES);
			break;
		}
		if (s->nfiles == *cap) {
			size_t ncap = *cap ? 2 * *cap : 32;
			struct page_file *f = realloc(s->files, ncap * sizeof *f);

			if (!f) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				break;
			}
			s->files = f;
			*cap = ncap;
		}
		s->files[s->nfiles].name = strdup(name);
		s->files[s->nfiles].path = strdup(path);
		s->files[s->nfiles].type = content_type(name);
		s->nfiles++;
		if (!s->files[s->nfiles - 1].name || !s->files[s->nfiles - 1].path)
			rc = ks_err_set(err, -ENOMEM, "out of memory");
	}
	closedir(d);
	return rc;
}

static int page_file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct page_file *)a)->name,
		      ((const struct page_file *)b)->name);
}

static int page_files_load(struct ks_view_server *s, const char *page_dir,
			   struct ks_err *err)
{
	char real[4096];
	size_t cap = 0;
	int rc;

	if (!realpath(page_dir, real))
		return ks_err_set(err, -errno, "the page directory %s: %s", page_dir,
				  strerror(errno));
	rc = page_walk(s, &cap, real, "", 0, err);
	if (rc) {
		page_files_free(s);
		return rc;
	}
	qsort(s->files, s->nfiles, sizeof *s->files, page_file_cmp);
	return 0;
}

static int page_key_cmp(const void *key, const void *f)
{
	return strcmp(key, ((const struct page_file *)f)->name);
}

static const struct page_file *page_file_find(const struct ks_view_server *s,
					      const char *name)
{
	return bsearch(name, s->files, s->nfiles, sizeof *s->files, page_key_cmp);
}

/* ------------------------------------------------------------------ */
/* Answers                                                             */
/* ------------------------------------------------------------------ */

static const char *status_text(int status)
{
	switch (status) {
	case 200: return "OK";
	case 303: return "See Other";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Error";
	}
}

/* Whether the client asked to keep the connection open: HTTP/1.1 unless it
 * said "close", HTTP/1.0 only if it said "keep-alive". */
static bool client_keeps_alive(const struct mg_connection *c,
			       const struct mg_request_info *ri)
{
	const char *h = mg_get_header(c, "Connection");

	if (ri && ri->http_version && strcmp(ri->http_version, "1.1") == 0)
		return !h || strcasecmp(h, "close") != 0;
	return h && strcasecmp(h, "keep-alive") == 0;
}

/* Sends a complete answer.  extra: more header lines ("Name: value\r\n")
 * or NULL.  close: the connection is closed after it (the request's body
 * was not read, or the request was refused). */
static void send_answer(struct mg_connection *c, int status, const char *type,
			const char *extra, const void *body, size_t len, bool close)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	bool head = ri && strcmp(ri->request_method, "HEAD") == 0;

	if (!close && !client_keeps_alive(c, ri))
		close = true;
	if (close)
		mg_disable_connection_keep_alive(c);
	mg_printf(c,
		  "HTTP/1.1 %d %s\r\n"
		  "Content-Type: %s\r\n"
		  "Content-Length: %zu\r\n"
		  SECURITY_HEADERS
		  "%s"
		  "Connection: %s\r\n"
		  "\r\n",
		  status, status_text(status), type, len, extra ? extra : "",
		  close ? "close" : "keep-alive");
	if (len && !head)
		mg_write(c, body, len);
}

/* A short text answer for an error status.  Returns civetweb's "handled". */
static int send_error(struct mg_connection *c, int status, const char *extra,
		      bool close, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int send_error(struct mg_connection *c, int status, const char *extra,
		      bool close, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof msg - 2)
		n = (int)sizeof msg - 2;
	msg[n++] = '\n';
	msg[n] = '\0';
	send_answer(c, status, "text/plain; charset=utf-8", extra, msg, (size_t)n, close);
	return status;
}

/* ------------------------------------------------------------------ */
/* Host and Origin                                                     */
/* ------------------------------------------------------------------ */

/* Host must name this server by one of this machine's names or
 * addresses, on every address listened on: a DNS name rebound to this
 * machine sends its own name. */
static bool host_ok(const struct ks_view_server *s, const char *host)
{
	if (!host)
		return false;
	for (size_t i = 0; i < s->nhosts; i++)
		if (strcasecmp(host, s->hosts[i]) == 0)
			return true;
	return false;
}

/* A browser sends Origin with a cross-site POST and every WebSocket
 * handshake: it must be this server's own, by one of its names. */
static bool origin_ok(const struct ks_view_server *s, const char *origin)
{
	if (!origin)
		return true;
	if (strncasecmp(origin, "http://", 7) != 0)
		return false;
	return host_ok(s, origin + 7);
}

/* Adds "name:port" (IPv6 addresses in brackets) to the Host values. */
static void add_host(struct ks_view_server *s, const char *name)
{
	char h[300];
	bool v6 = strchr(name, ':') != NULL;

	if (!name[0] || s->nhosts >= MAX_HOSTS || strlen(name) > 250)
		return;
	snprintf(h, sizeof h, "%s%s%s:%d", v6 ? "[" : "", name, v6 ? "]" : "", s->port);
	for (size_t i = 0; i < s->nhosts; i++)
		if (strcasecmp(h, s->hosts[i]) == 0)
			return;
	snprintf(s->hosts[s->nhosts++], sizeof s->hosts[0], "%s", h);
}

/* The names a browser may reach this server by: the loopback names, the
 * address listened on and, when that is not a loopback address, the
 * machine's host name, its full name and its IPv4 addresses. */
static void set_hosts(struct ks_view_server *s, const char *listen_host)
{
	struct ifaddrs *ifa = NULL;
	char name[256];

	s->nhosts = 0;
	add_host(s, "127.0.0.1");
	add_host(s, "localhost");
	add_host(s, "::1");
	if (strcmp(listen_host, "0.0.0.0") != 0)
		add_host(s, listen_host);
	if (s->loopback)
		return;
	if (gethostname(name, sizeof name) == 0) {
		struct addrinfo hints = { .ai_flags = AI_CANONNAME }, *ai = NULL;

		name[sizeof name - 1] = '\0';
		add_host(s, name);
		if (getaddrinfo(name, NULL, &hints, &ai) == 0) {
			if (ai && ai->ai_canonname)
				add_host(s, ai->ai_canonname);
			freeaddrinfo(ai);
		}
	}
	if (strcmp(listen_host, "0.0.0.0") == 0 && getifaddrs(&ifa) == 0) {
		for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
			char text[INET_ADDRSTRLEN];

			if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
				continue;
			if (inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr,
				      text, sizeof text))
				add_host(s, text);
		}
		freeifaddrs(ifa);
	}
}

/* ------------------------------------------------------------------ */
/* The token                                                           */
/* ------------------------------------------------------------------ */

/* Compares in a time that does not depend on where they differ. */
static bool same_secret(const char *a, size_t alen, const char *b)
{
	size_t blen = strlen(b);
	unsigned char d = alen != blen;

	for (size_t i = 0; i < blen; i++)
		d |= (unsigned char)(i < alen ? a[i] : 0) ^ (unsigned char)b[i];
	return d == 0;
}

/* The value of cookie name in a Cookie header, and its length; NULL if
 * it is not there. */
static const char *cookie_value(const char *header, const char *name, size_t *len)
{
	size_t n = strlen(name);

	for (const char *p = header; p && *p;) {
		p += strspn(p, " \t;");
		if (strncmp(p, name, n) == 0 && p[n] == '=') {
			*len = strcspn(p + n + 1, ";");
			return p + n + 1;
		}
		p = strchr(p, ';');
	}
	return NULL;
}

/* "token=VALUE" in a query string: the value and its length, or NULL. */
static const char *query_token(const char *query, size_t *len)
{
	for (const char *p = query; p && *p;) {
		if (strncmp(p, "token=", 6) == 0) {
			*len = strcspn(p + 6, "&#");
			return p + 6;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return NULL;
}

/* Whether the request carries the token: in the cookie, or as a bearer
 * token.  Always true without one (--no-token). */
static bool token_ok(struct mg_connection *c, const struct ks_view_server *s)
{
	const char *auth = mg_get_header(c, "Authorization");
	const char *v;
	size_t len;

	if (!s->token[0])
		return true;
	if (auth && strncasecmp(auth, "Bearer ", 7) == 0 &&
	    same_secret(auth + 7, strlen(auth + 7), s->token))
		return true;
	v = cookie_value(mg_get_header(c, "Cookie"), s->cookie, &len);
	return v && same_secret(v, len, s->token);
}

bool ks_view_host_is_loopback(const char *host)
{
	struct in_addr a;

	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a) != 1)
		return false;
	return (ntohl(a.s_addr) >> 24) == 127;
}

/* ------------------------------------------------------------------ */
/* Answering a request                                                 */
/* ------------------------------------------------------------------ */

/* civetweb's worker threads have 100 KiB stacks: too little for jansson
 * parsing a request nested 2048 deep (its limit) or for a handler's
 * recursion.  Each request is answered on a thread of its own with an
 * ordinary stack; creating one costs tens of microseconds. */
#define REQUEST_STACK (8u << 20)

struct request_job {
	const struct ks_view *view;
	const char *text;
	size_t len;
	char *resp;     /* malloc'ed by ks_view_request; NULL if out of memory */
	size_t rlen;
};

static void *request_job_run(void *arg)
{
	struct request_job *j = arg;

	j->resp = ks_view_request(j->view, j->text, j->len, &j->rlen);
	return NULL;
}

/* ks_view_request on a thread with a REQUEST_STACK stack.  The caller
 * frees the answer; NULL when out of memory or threads. */
static char *answer(const struct ks_view *v, const char *text, size_t len,
		    size_t *rlen)
{
	struct request_job j = { .view = v, .text = text, .len = len };
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (pthread_attr_init(&attr) != 0)
		return NULL;
	rc = pthread_attr_setstacksize(&attr, REQUEST_STACK);
	if (rc == 0)
		rc = pthread_create(&t, &attr, request_job_run, &j);
	pthread_attr_destroy(&attr);
	if (rc != 0)
		return NULL;
	pthread_join(t, NULL);
	*rlen = j.rlen;
	return j.resp;
}

/* ------------------------------------------------------------------ */
/* POST /api                                                           */
/* ------------------------------------------------------------------ */

/* application/json or text/plain, with or without parameters. */
static bool api_type_ok(const char *type)
{
	size_t n;

	if (!type)
		return false;
	while (*type == ' ')
		type++;
	n = strcspn(type, "; \t");
	return (n == 16 && strncasecmp(type, "application/json", 16) == 0) ||
	       (n == 10 && strncasecmp(type, "text/plain", 10) == 0);
}

static int serve_api(struct mg_connection *c, const struct ks_view_server *s,
		     const struct mg_request_info *ri)
{
	const size_t limit = KS_VIEW_MAX_REQUEST;
	size_t len = 0, cap, rlen = 0;
	char *body, *resp;

	if (strcmp(ri->request_method, "POST") != 0)
		return send_error(c, 405, "Allow: POST\r\n", true,
				  "%s /api: the API takes POST requests with one JSON "
				  "request as the body", ri->request_method);
	if (!api_type_ok(mg_get_header(c, "Content-Type")))
		return send_error(c, 415, NULL, true,
				  "the body's Content-Type is %s; application/json or "
				  "text/plain is accepted",
				  mg_get_header(c, "Content-Type") ? "not accepted" : "missing");
	if (ri->content_length > (long long)limit)
		return send_error(c, 413, NULL, true,
				  "the body is %lld bytes; at most %zu are accepted",
				  ri->content_length, limit);
	/* Known length: exactly that; chunked: grown up to one byte more than
	 * the limit, to see that it is over. */
	cap = ri->content_length >= 0 ? (size_t)ri->content_length + 1 : 64 * 1024;
	body = malloc(cap);
	if (!body)
		return send_error(c, 500, NULL, true, "out of memory");
	for (;;) {
		int n;

		if (len == cap) {
			size_t ncap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
			char *nb;

			if (ncap <= cap)
				break;
			nb = realloc(body, ncap);
			if (!nb) {
				free(body);
				return send_error(c, 500, NULL, true, "out of memory");
			}
			body = nb;
			cap = ncap;
		}
		n = mg_read(c, body + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > limit)
			break;
	}
	if (len > limit) {
		free(body);
		return send_error(c, 413, NULL, true,
				  "the body is over %zu bytes; at most %zu are accepted",
				  limit, limit);
	}
	resp = answer(s->view, body, len, &rlen);
	free(body);
	if (!resp)
		return send_error(c, 500, NULL, true, "out of memory or threads");
	send_answer(c, 200, "application/json", NULL, resp, rlen, false);
	free(resp);
	return 200;
}

/* ------------------------------------------------------------------ */
/* The page                                                            */
/* ------------------------------------------------------------------ */

/* The file a request path names, or NULL.  raw is the path as sent (not
 * yet decoded): anything that could climb out of the page directory or
 * name a file in two ways is refused before the list is looked at. */
static const struct page_file *page_lookup(const struct ks_view_server *s,
					   const char *raw)
{
	char name[1100];
	size_t n;

	if (!raw || raw[0] != '/')
		return NULL;
	n = strcspn(raw, "?#");
	if (n >= sizeof name)
		return NULL;
	memcpy(name, raw + 1, n - 1);
	name[n - 1] = '\0';
	if (!name[0])
		snprintf(name, sizeof name, "index.html");
	/* No escapes at all: the page's names need none. */
	if (strchr(name, '%') || strchr(name, '\\') || strstr(name, "..") ||
	    strstr(name, "//") || name[0] == '/')
		return NULL;
	return page_file_find(s, name);
}

static int serve_page(struct mg_connection *c, const struct ks_view_server *s,
		      const struct mg_request_info *ri, const char *raw)
{
	const struct page_file *f;
	struct ks_err err;
	char *data = NULL;
	size_t len = 0;
	int rc;

	if (strcmp(ri->request_method, "GET") != 0 && strcmp(ri->request_method, "HEAD") != 0)
		return send_error(c, 405, "Allow: GET, HEAD\r\n", true,
				  "%s: the page's files take GET or HEAD",
				  ri->request_method);
	f = page_lookup(s, raw);
	if (!f)
		return send_error(c, 404, NULL, false, "not found");
	rc = ks_read_file_at(AT_FDCWD, f->path, 0, PAGE_MAX_FILE, &data, &len, &err);
	if (rc)
		return send_error(c, 404, NULL, false, "not found");
	send_answer(c, 200, f->type, NULL, data, len, false);
	free(data);
	return 200;
}

/* ------------------------------------------------------------------ */
/* Dispatch                                                            */
/* ------------------------------------------------------------------ */

/* Every request starts here; civetweb's own handling is reached only for
 * the WebSocket handshake of /ws. */
static int begin_request(struct mg_connection *c)
{
	const struct mg_request_info *ri = mg_get_request_info(c);
	const struct ks_view_server *s = mg_get_user_data(mg_get_context(c));
	const char *host = mg_get_header(c, "Host");
	const char *uri = ri->local_uri_raw;

	if (!atomic_load_explicit(&s->ready, memory_order_acquire))
		return send_error(c, 503, NULL, true, "the server is starting");
	if (!host_ok(s, host))
		return send_error(c, 403, NULL, true,
				  "the Host header must name this machine: 127.0.0.1:%d, "
				  "localhost:%d, or another of its names or addresses with "
				  "port %d", s->port, s->port, s->port);
	if (!origin_ok(s, mg_get_header(c, "Origin")))
		return send_error(c, 403, NULL, true,
				  "requests from another site's page are refused");
	if (!uri || ri->request_uri[0] != '/')
		return send_error(c, 404, NULL, true, "not found");
	if (!token_ok(c, s)) {
		size_t len;
		const char *t = strcmp(uri, "/") == 0 && strcmp(ri->request_method, "GET") == 0
					? query_token(ri->query_string, &len)
					: NULL;
		char extra[300];

		if (!t || !same_secret(t, len, s->token))
			return send_error(c, 403, NULL, true,
					  "this viewer asks for its token: open the address "
					  "kscope view printed, which ends in ?token=...");
		/* The address with the token, once: the cookie from now on,
		 * and the page's address without the token. */
		snprintf(extra, sizeof extra,
			 "Set-Cookie: %s=%s; Path=/; HttpOnly; SameSite=Strict\r\n"
			 "Location: /\r\n", s->cookie, s->token);
		return send_error(c, 303, extra, false, "see /");
	}
	if (strcmp(uri, "/api") == 0)
		return serve_api(c, s, ri);
	if (strcmp(uri, "/ws") == 0) {
		const char *up = mg_get_header(c, "Upgrade");

		if (up && strcasecmp(up, "websocket") == 0)
			return 0; /* civetweb does the handshake */
		return send_error(c, 400, NULL, true,
				  "/ws takes WebSocket connections only");
	}
	return serve_page(c, s, ri, ri->request_uri);
}

/* civetweb's own log lines would reach the terminal: kscope keeps quiet. */
static int log_message(const struct mg_connection *c, const char *message)
{
	(void)c;
	(void)message;
	return 1;
}

/* ------------------------------------------------------------------ */
/* WebSocket                                                           */
/* ------------------------------------------------------------------ */

static int ws_connect(const struct mg_connection *c, void *cbdata)
{
	struct ws_conn *w = calloc(1, sizeof *w);

	(void)cbdata;
	if (!w)
		return 1;
	mg_set_user_connection_data(c, w);
	return 0;
}

/* Closes with a status code and a reason.  Returns 0 (civetweb: close). */
static int ws_close_with(struct mg_connection *c, unsigned code, const char *reason)
{
	char frame[125];
	size_t n = strlen(reason);

	if (n > sizeof frame - 2)
		n = sizeof frame - 2;
	frame[0] = (char)(code >> 8);
	frame[1] = (char)(code & 0xff);
	memcpy(frame + 2, reason, n);
	mg_websocket_write(c, MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE, frame, n + 2);
	return 0;
}

static int ws_data(struct mg_connection *c, int bits, char *data, size_t len,
		   void *cbdata)
{
	const struct ks_view_server *s = cbdata;
	struct ws_conn *w = mg_get_user_connection_data(c);
	int op = bits & 0x0f;
	bool fin = (bits & 0x80) != 0;
	char *resp;
	size_t rlen = 0;

	switch (op) {
	case MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE:
		return 0;
	case MG_WEBSOCKET_OPCODE_PING:
		mg_websocket_write(c, MG_WEBSOCKET_OPCODE_PONG, data, len);
		return 1;
	case MG_WEBSOCKET_OPCODE_PONG:
		return 1;
	case MG_WEBSOCKET_OPCODE_BINARY:
		return ws_close_with(c, 1003, "requests are text messages");
	case MG_WEBSOCKET_OPCODE_TEXT:
		if (w->open)
			return ws_close_with(c, 1002, "a new message began inside another");
		break;
	case MG_WEBSOCKET_OPCODE_CONTINUATION:
		if (!w->open)
			return ws_close_with(c, 1002, "a continuation without a message");
		break;
	default:
		return ws_close_with(c, 1002, "unknown frame type");
	}
	if (len > KS_VIEW_MAX_REQUEST || w->len + len > KS_VIEW_MAX_REQUEST)
		return ws_close_with(c, 1009, "a request is at most 1 MiB");
	if (!fin || w->open) {
		char *nb = realloc(w->buf, w->len + len + 1);

		if (!nb)
			return ws_close_with(c, 1011, "out of memory");
		w->buf = nb;
		memcpy(w->buf + w->len, data, len);
		w->len += len;
		w->open = !fin;
		if (!fin)
			return 1;
		resp = answer(s->view, w->buf, w->len, &rlen);
		w->len = 0;
	} else {
		resp = answer(s->view, data, len, &rlen);
	}
	if (!resp)
		return ws_close_with(c, 1011, "out of memory or threads");
	mg_websocket_write(c, MG_WEBSOCKET_OPCODE_TEXT, resp, rlen);
	free(resp);
	return 1;
}

static void ws_closed(const struct mg_connection *c, void *cbdata)
{
	struct ws_conn *w = mg_get_user_connection_data(c);

	(void)cbdata;
	if (w) {
		free(w->buf);
		free(w);
		mg_set_user_connection_data(c, NULL);
	}
}

/* ------------------------------------------------------------------ */
/* Start and stop                                                      */
/* ------------------------------------------------------------------ */

/* Why civetweb could not listen on host:port (it only says "Failed to
 * setup server ports"): the same bind, tried here.  Returns a negative
 * errno, or 0 if the bind works now. */
static int bind_problem(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd, one = 1, rc = 0;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* as civetweb does, so that only a listening socket counts */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0)
		rc = -errno;
	close(fd);
	return rc;
}

int ks_view_serve_start(const struct ks_view *v, const char *host, int port,
			const char *page_dir, const char *token, struct ks_view_server **out,
			struct ks_err *err)
{
	struct ks_view_server *s;
	struct mg_callbacks cb;
	struct mg_server_port ports[4];
	char listen[128], etext[256] = "";
	unsigned ecode = 0;
	struct mg_error_data edata = { &ecode, etext, sizeof etext };
	struct mg_init_data init;
	struct in_addr a;
	int rc;
	const char *options[] = {
		"listening_ports", listen,
		"num_threads", HTTP_THREADS,
		"request_timeout_ms", HTTP_TIMEOUT_MS,
		"websocket_timeout_ms", "3600000",
		"enable_keep_alive", "yes",
		/* headers and body go out in two writes: without this, each
		 * answer waits for the client's delayed ACK (about 40 ms) */
		"tcp_nodelay", "1",
		"enable_directory_listing", "no",
		"access_control_allow_origin", "",
		"access_control_allow_methods", "",
		"access_control_allow_headers", "",
		/* paths stay as sent: page_lookup refuses any escape */
		"decode_url", "no",
		NULL,
	};

	*out = NULL;
	if (inet_pton(AF_INET, host, &a) != 1)
		return ks_err_set(err, -EINVAL, "'%s' is not an IPv4 address; accepted: "
				  "an address such as 127.0.0.1 or 0.0.0.0", host);
	if (port < 0 || port > 65535)
		return ks_err_set(err, -EINVAL, "port %d is out of range; accepted: 0 to "
				  "65535", port);
	rc = civetweb_load(err);
	if (rc)
		return rc;
	if (!(mg_check_feature(MG_FEATURES_WEBSOCKET) & MG_FEATURES_WEBSOCKET))
		return ks_err_set(err, -ENOTSUP, "this civetweb library was built "
				  "without WebSocket support");
	s = calloc(1, sizeof *s);
	if (!s)
		return ks_err_set(err, -ENOMEM, "out of memory");
	s->view = v;
	s->loopback = ks_view_host_is_loopback(host);
	if (token && strlen(token) > KS_VIEW_TOKEN_MAX) {
		free(s);
		return ks_err_set(err, -EINVAL, "the token is over %d characters",
				  KS_VIEW_TOKEN_MAX);
	}
	snprintf(s->token, sizeof s->token, "%s", token ? token : "");
	rc = page_files_load(s, page_dir, err);
	if (rc)
		goto fail;
	if (!page_file_find(s, "index.html")) {
		rc = ks_err_set(err, -ENOENT, "the page directory %s has no index.html",
				page_dir);
		goto fail;
	}

	snprintf(listen, sizeof listen, "%s:%d", host, port);
	memset(&cb, 0, sizeof cb);
	cb.begin_request = begin_request;
	cb.log_message = log_message;
	memset(&init, 0, sizeof init);
	init.callbacks = &cb;
	init.user_data = s;
	init.configuration_options = options;
	mg_init_library(0);
	s->ctx = mg_start2(&init, &edata);
	if (!s->ctx) {
		rc = bind_problem(host, port);
		if (rc == -EADDRINUSE)
			ks_err_set(err, rc, "cannot listen on %s:%d: the port is in use "
				   "(another kscope view?); choose another --port, or 0 "
				   "for a free one", host, port);
		else if (rc == -EADDRNOTAVAIL)
			ks_err_set(err, rc, "cannot listen on %s:%d: %s is not an address "
				   "of this machine; accepted: 127.0.0.1, 0.0.0.0 or one "
				   "of this machine's addresses", host, port, host);
		else if (rc == -EACCES)
			ks_err_set(err, rc, "cannot listen on %s:%d: ports below 1024 need "
				   "privileges; choose a --port from 1024 to 65535, or 0",
				   host, port);
		else
			ks_err_set(err, rc = -EIO, "cannot start the web server on %s:%d: %s",
				   host, port, etext[0] ? etext : "civetweb failed");
		mg_exit_library();
		goto fail;
	}
	rc = mg_get_server_ports(s->ctx, 4, ports);
	if (rc < 1 || ports[0].port <= 0) {
		rc = ks_err_set(err, -EIO, "the web server did not say which port it "
				"listens on");
		mg_stop(s->ctx);
		mg_exit_library();
		s->ctx = NULL;
		goto fail;
	}
	s->port = ports[0].port;
	if (inet_pton(AF_INET, host, &s->addr) != 1 || s->addr.s_addr == htonl(INADDR_ANY))
		s->addr.s_addr = htonl(INADDR_LOOPBACK);
	set_hosts(s, host);
	snprintf(s->cookie, sizeof s->cookie, "kscope_view_%d", s->port);
	mg_set_websocket_handler(s->ctx, "/ws", ws_connect, NULL, ws_data, ws_closed, s);
	atomic_store_explicit(&s->ready, true, memory_order_release);
	*out = s;
	return 0;
fail:
	page_files_free(s);
	free(s);
	return rc;
}

int ks_view_server_port(const struct ks_view_server *s)
{
	return s->port;
}

size_t ks_view_server_files(const struct ks_view_server *s)
{
	return s->nfiles;
}

struct stopper {
	struct mg_context *ctx;
	atomic_bool done;
};

static void *stop_thread(void *arg)
{
	struct stopper *st = arg;

	mg_stop(st->ctx);
	atomic_store(&st->done, true);
	return NULL;
}

/* civetweb's listening thread looks at its stop flag between polls of
 * two seconds; a connection to the server wakes it at once. */
static void poke(const struct ks_view_server *s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)s->port),
				  .sin_addr = s->addr };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	(void)connect(fd, (struct sockaddr *)&sa, sizeof sa);
	close(fd);
}

void ks_view_server_stop(struct ks_view_server *s)
{
	if (!s)
		return;
	if (s->ctx) {
		struct stopper st = { s->ctx, false };
		pthread_t t;

		if (pthread_create(&t, NULL, stop_thread, &st) == 0) {
			while (!atomic_load(&st.done)) {
				poke(s);
				usleep(20000);
			}
			pthread_join(t, NULL);
		} else {
			mg_stop(s->ctx);
		}
		mg_exit_library();
	}
	page_files_free(s);
	free(s);
}
