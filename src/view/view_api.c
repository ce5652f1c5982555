/*
 * view_api.c: the request envelope of kscope view's API, the dispatch to
 * the command tables, and the parameter checks every handler uses.
 *
 * A request is {id, moduleName, type:"request", command, params}; the
 * response is {type:"response", id, requestId, result, command,
 * moduleName, body}.  Anything wrong with a request -- not JSON, not an
 * object, a missing or mistyped field, an unknown command, a bad
 * parameter -- gets result:false and body {"message": "..."} naming what
 * was wrong and what is accepted.  The response is always one JSON text.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

static const char *const modules[] = {
	"timeline", "source", "roofline", "profile", "findings", "predict", "causal", NULL,
};

static const struct kv_command *const tables[] = {
	kv_timeline_commands, kv_source_commands, kv_more_commands,
};

/* Response ids: one counter for the server's life. */
static atomic_uint_fast64_t next_response_id = 1;

int kv_fail(struct kv_reqerr *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *json_type_name(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

int kv_param_str(json_t *params, const char *name, bool required,
		 const char **out, struct kv_reqerr *e)
{
	json_t *j = json_object_get(params, name);

	if (!j) {
		if (required)
			return kv_fail(e, "params.%s is missing; a string is expected", name);
		return 0;
	}
	if (!json_is_string(j))
		return kv_fail(e, "params.%s is %s; a string is expected", name,
			       json_type_name(j));
	*out = json_string_value(j);
	return 0;
}

int kv_param_int(json_t *params, const char *name, bool required, int64_t lo,
		 int64_t hi, int64_t *out, struct kv_reqerr *e)
{
	json_t *j = json_object_get(params, name);
	int64_t v;

	if (!j) {
		if (required)
			return kv_fail(e, "params.%s is missing; an integer from %" PRId64
				       " to %" PRId64 " is expected", name, lo, hi);
		return 0;
	}
	if (json_is_integer(j)) {
		v = json_integer_value(j);
	} else if (json_is_real(j)) {
		double d = json_real_value(j);

		/* 9.2e18 is the largest double below 2^63 in steps that matter */
		if (!isfinite(d) || d != floor(d) || d < -9.2e18 || d > 9.2e18)
			return kv_fail(e, "params.%s is %g; an integer from %" PRId64
				       " to %" PRId64 " is expected", name, d, lo, hi);
		v = (int64_t)d;
	} else if (json_is_string(j)) {
		const char *s = json_string_value(j);
		char *end;

		errno = 0;
		long long ll = strtoll(s, &end, 10);
		if (!*s || *end || errno || end == s || (*s != '-' && (*s < '0' || *s > '9')))
			return kv_fail(e, "params.%s is \"%.64s\"; an integer from %" PRId64
				       " to %" PRId64 " is expected", name, s, lo, hi);
		v = ll;
	} else {
		return kv_fail(e, "params.%s is %s; an integer from %" PRId64 " to %" PRId64
			       " is expected", name, json_type_name(j), lo, hi);
	}
	if (v < lo || v > hi)
		return kv_fail(e, "params.%s is %" PRId64 "; an integer from %" PRId64
			       " to %" PRId64 " is expected", name, v, lo, hi);
	*out = v;
	return 0;
}

int kv_param_num(json_t *params, const char *name, bool required, double lo,
		 double hi, double *out, struct kv_reqerr *e)
{
	json_t *j = json_object_get(params, name);
	double d;

	if (!j) {
		if (required)
			return kv_fail(e, "params.%s is missing; a number from %g to %g "
				       "is expected", name, lo, hi);
		return 0;
	}
	if (!json_is_number(j))
		return kv_fail(e, "params.%s is %s; a number from %g to %g is expected",
			       name, json_type_name(j), lo, hi);
	d = json_number_value(j);
	if (!isfinite(d) || d < lo || d > hi)
		return kv_fail(e, "params.%s is %g; a number from %g to %g is expected",
			       name, d, lo, hi);
	*out = d;
	return 0;
}

/* Names of the card kinds, for messages. */
static void kinds_text(unsigned need, char *buf, size_t size)
{
	static const char *const names[] = {
		"timeline", "source", "details", "roofline", "profile", "findings",
		"predict", "causal",
	};
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (!(need & (1u << i)))
			continue;
		int k = snprintf(buf + n, size - n, "%s%s", n ? "+" : "", names[i]);
		if (k < 0 || (size_t)k >= size - n)
			return;
		n += (size_t)k;
	}
}

/* "a", "b" and 3 more: the ids of the cards with every bit of need. */
static void cards_text(const struct ks_view *v, unsigned need, char *buf, size_t size)
{
	size_t n = 0, shown = 0, total = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < v->ncards; i++) {
		if ((v->cards[i].kinds & need) != need)
			continue;
		total++;
		if (shown < 8) {
			int k = snprintf(buf + n, size - n, "%s\"%.100s\"", shown ? ", " : "",
					 v->cards[i].id);
			if (k < 0 || (size_t)k >= size - n)
				break;
			n += (size_t)k;
			shown++;
		}
	}
	if (total > shown)
		snprintf(buf + n, size - n, " and %zu more", total - shown);
}

int kv_param_card(const struct ks_view *v, json_t *params, unsigned need,
		  const struct kv_card **out, struct kv_reqerr *e)
{
	const char *id = NULL, *key = "cardId";
	char kinds[96], list[384];

	if (kv_param_str(params, "cardId", false, &id, e) < 0)
		return -1;
	if (!id) {
		key = "rankId";
		if (kv_param_str(params, "rankId", false, &id, e) < 0)
			return -1;
	}
	kinds_text(need, kinds, sizeof kinds);
	if (id) {
		const struct kv_card *c = kv_card_find(v, id);

		if (!c || (c->kinds & need) != need) {
			cards_text(v, need, list, sizeof list);
			return kv_fail(e, "params.%s \"%.100s\" is %s; %s%s", key, id,
				       c ? "a card without that data" : "no card here",
				       list[0] ? "cards with " : "no card has ",
				       list[0] ? list : kinds);
		}
		*out = c;
		return 0;
	}
	for (size_t i = 0; i < v->ncards; i++) {
		if ((v->cards[i].kinds & need) == need) {
			*out = &v->cards[i];
			return 0;
		}
	}
	return kv_fail(e, "the imported data has no %s data", kinds);
}

const struct kv_card *kv_card_find(const struct ks_view *v, const char *id)
{
	for (size_t i = 0; i < v->ncards; i++)
		if (strcmp(v->cards[i].id, id) == 0)
			return &v->cards[i];
	return NULL;
}

const struct kv_source *kv_source_find(const struct kv_card *c, const char *path)
{
	for (size_t i = 0; i < c->nsources; i++)
		if (strcmp(c->sources[i].path, path) == 0 ||
		    (c->sources[i].name && strcmp(c->sources[i].name, path) == 0))
			return &c->sources[i];
	return NULL;
}

static const struct kv_command *find_command(const char *command)
{
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (const struct kv_command *c = tables[t]; c->command; c++)
			if (strcmp(c->command, command) == 0)
				return c;
	return NULL;
}

static bool known_module(const char *m)
{
	for (size_t i = 0; modules[i]; i++)
		if (strcmp(modules[i], m) == 0)
			return true;
	return false;
}

/* ------------------------------------------------------------------ */
/* Numbers in their shortest form                                      */
/* ------------------------------------------------------------------ */

/* Rewrites the real number of text[0, len) (jansson's %.17g, which
 * prints 1146.56 as 1146.5599999999999) as the shortest text that reads
 * back as the same double, keeping a ".0" where it had one so that a
 * real stays a real.  The result is never longer; returns its length. */
static size_t shorten_real(char *text, size_t len)
{
	char tok[40], buf[40];
	double d;

	if (len >= sizeof tok)
		return len;
	memcpy(tok, text, len);
	tok[len] = '\0';
	d = strtod(tok, NULL);
	if (!isfinite(d))
		return len;
	for (int prec = 1; prec <= 17; prec++) {
		size_t n;

		snprintf(buf, sizeof buf - 2, "%.*g", prec, d);
		if (strtod(buf, NULL) != d)
			continue;
		n = strlen(buf);
		if (!strpbrk(buf, ".e")) {
			memcpy(buf + n, ".0", 3);
			n += 2;
		}
		if (n < len) {
			memcpy(text, buf, n);
			return n;
		}
		break;
	}
	return len;
}

/*
 * Every real number of a JSON text (outside strings) in its shortest
 * form, in place: the page and any other reader see the numbers the
 * data holds (341.693, not 341.69299999999998).  The text is jansson's
 * output, so it is well formed; integers are left as they are.
 */
static void shorten_reals(char *text)
{
	char *r = text, *w = text;
	bool in_string = false;

	while (*r) {
		if (in_string) {
			if (*r == '\\' && r[1]) {
				*w++ = *r++;
			} else if (*r == '"') {
				in_string = false;
			}
			*w++ = *r++;
		} else if (*r == '"') {
			in_string = true;
			*w++ = *r++;
		} else if (*r == '-' || (*r >= '0' && *r <= '9')) {
			size_t len = strspn(r, "-+0123456789.eE");
			bool real = memchr(r, '.', len) || memchr(r, 'e', len) ||
				    memchr(r, 'E', len);

			memmove(w, r, len);
			r += len;
			w += real ? shorten_real(w, len) : len;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* The envelope around body; steals body. */
static char *respond(json_t *request_id, const char *command, const char *module,
		     bool ok, json_t *body, size_t *len_out)
{
	json_t *r = json_object();
	char *text;

	json_object_set_new(r, "type", json_string("response"));
	json_object_set_new(r, "id", json_integer((json_int_t)atomic_fetch_add(
						 &next_response_id, 1)));
	json_object_set(r, "requestId", request_id ? request_id : json_null());
	json_object_set_new(r, "result", json_boolean(ok));
	json_object_set_new(r, "command", command ? json_string(command) : json_null());
	json_object_set_new(r, "moduleName", module ? json_string(module) : json_null());
	json_object_set_new(r, "body", body ? body : json_object());
	text = json_dumps(r, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(r);
	if (text)
		shorten_reals(text);
	if (text && len_out)
		*len_out = strlen(text);
	return text;
}

static char *reject(json_t *request_id, const char *command, const char *module,
		    const char *msg, size_t *len_out)
{
	/* msg may have been cut inside a character by a bounded printf, or
	 * name a file whose name is not UTF-8 */
	json_t *body = json_pack("{s:o}", "message", ks_json_text(msg));

	return respond(request_id, command, module, false, body, len_out);
}

char *ks_view_request(const struct ks_view *v, const char *text, size_t len,
		      size_t *len_out)
{
	json_error_t jerr;
	json_t *req, *id, *params, *body = NULL;
	const char *module, *command, *type;
	const struct kv_command *cmd;
	struct kv_reqerr e = { "" };
	char msg[640];
	char *out;

	if (len > KS_VIEW_MAX_REQUEST) {
		snprintf(msg, sizeof msg, "the request is %zu bytes; at most %u are accepted",
			 len, KS_VIEW_MAX_REQUEST);
		return reject(NULL, NULL, NULL, msg, len_out);
	}
	req = json_loadb(text, len, JSON_REJECT_DUPLICATES,
			 &jerr);
	if (!req) {
		snprintf(msg, sizeof msg, "the request is not JSON: %s at byte %d",
			 jerr.text, jerr.position);
		return reject(NULL, NULL, NULL, msg, len_out);
	}
	if (!json_is_object(req)) {
		snprintf(msg, sizeof msg, "the request is %s; an object {id, moduleName, "
			 "type, command, params} is expected", json_type_name(req));
		json_decref(req);
		return reject(NULL, NULL, NULL, msg, len_out);
	}
	id = json_object_get(req, "id");
	module = json_string_value(json_object_get(req, "moduleName"));
	command = json_string_value(json_object_get(req, "command"));
	type = json_string_value(json_object_get(req, "type"));
	params = json_object_get(req, "params");

	if (!id || !(json_is_integer(id) || json_is_string(id)) ||
	    (json_is_integer(id) && json_integer_value(id) < 0)) {
		out = reject(NULL, command, module,
			     "the request's id is missing or not a non-negative integer "
			     "or a string", len_out);
	} else if (!type || strcmp(type, "request") != 0) {
		out = reject(id, command, module,
			     "the request's type must be \"request\"", len_out);
	} else if (!command) {
		out = reject(id, NULL, module,
			     "the request's command is missing or not a string", len_out);
	} else if (!(cmd = find_command(command))) {
		snprintf(msg, sizeof msg, "unknown command \"%.100s\"; docs/view.md lists "
			 "the commands", command);
		out = reject(id, command, module, msg, len_out);
	} else if (!module || !known_module(module)) {
		snprintf(msg, sizeof msg, "the request's moduleName is missing or unknown; "
			 "\"%s\" is expected for %s", cmd->module, command);
		out = reject(id, command, module, msg, len_out);
	} else if (strcmp(module, cmd->module) != 0 &&
		   strcmp(command, "import/action") != 0) {
		snprintf(msg, sizeof msg, "%s belongs to moduleName \"%s\", not \"%.64s\"",
			 command, cmd->module, module);
		out = reject(id, command, module, msg, len_out);
	} else if (params && !json_is_object(params)) {
		snprintf(msg, sizeof msg, "the request's params is %s; an object is expected",
			 json_type_name(params));
		out = reject(id, command, module, msg, len_out);
	} else {
		json_t *p = params ? json_incref(params) : json_object();

		if (cmd->fn(v, p, &body, &e) < 0 || !body) {
			json_decref(body);
			out = reject(id, command, module,
				     e.msg[0] ? e.msg : "the request could not be answered",
				     len_out);
		} else {
			out = respond(id, command, module, true, body, len_out);
		}
		json_decref(p);
	}
	json_decref(req);
	return out;
}
