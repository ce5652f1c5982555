/*
 * kscope tune's search space: the JSON file (a list of configurations, or
 * an object of lists whose cartesian product is the space), parsed with
 * jansson, and the checks every space goes through, however it was made.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "readfile.h"
#include "tune_int.h"

#define MAX_SPACE_FILE (64u << 20)

/* ------------------------------------------------------------------ */
/* Checks                                                              */
/* ------------------------------------------------------------------ */

bool ks_tune_is_ident(const char *text, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char ch = text[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      ch == '_' || (i > 0 && ch >= '0' && ch <= '9')))
			return false;
	}
	return true;
}

static bool reads_as_int(const char *v)
{
	if (*v == '-')
		v++;
	if (!*v)
		return false;
	for (; *v; v++)
		if (*v < '0' || *v > '9')
			return false;
	return true;
}

bool ks_tune_space_is_int(const struct ks_tune_space *s, size_t c, size_t k)
{
	if (s->is_int)
		return s->is_int[c * s->nkeys + k] != 0;
	return reads_as_int(s->values[c * s->nkeys + k]);
}

/* What is wrong with a value, or NULL. */
static const char *value_problem(const char *v)
{
	size_t n = strlen(v);

	if (n == 0)
		return "is empty";
	if (n > KS_TUNE_MAX_VALUE)
		return "is too long";
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p == '\n' || *p == '\r')
			return "contains a line break";
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return "contains a control character";
	}
	return NULL;
}

static const char value_accepted[] =
	"accepted: 1 to 1024 characters without line breaks or control characters";

int ks_tune_space_check(const struct ks_tune_space *s, struct ks_err *err)
{
	if (s->nkeys == 0)
		return ks_err_set(err, -EINVAL, "the space has no keys; accepted: 1 to %d "
				  "keys per configuration", KS_TUNE_MAX_KEYS);
	if (s->nkeys > KS_TUNE_MAX_KEYS)
		return ks_err_set(err, -EINVAL, "the space has %zu keys; accepted: at most %d",
				  s->nkeys, KS_TUNE_MAX_KEYS);
	if (s->nconfigs == 0)
		return ks_err_set(err, -EINVAL, "the space has no configuration");
	if (s->nconfigs > KS_TUNE_MAX_CONFIGS)
		return ks_err_set(err, -EINVAL, "the space has %zu configurations; accepted: "
				  "at most %d", s->nconfigs, KS_TUNE_MAX_CONFIGS);
	for (size_t k = 0; k < s->nkeys; k++) {
		const char *key = s->keys[k];

		if (!key || !ks_tune_is_ident(key, strlen(key)) ||
		    strlen(key) > KS_TUNE_MAX_KEY)
			return ks_err_set(err, -EINVAL, "key '%.80s' is not a name; accepted: "
					  "a C identifier of 1 to %d characters",
					  key ? key : "(null)", KS_TUNE_MAX_KEY);
		for (size_t j = 0; j < k; j++)
			if (strcmp(s->keys[j], key) == 0)
				return ks_err_set(err, -EINVAL, "key %s appears twice", key);
	}
	for (size_t c = 0; c < s->nconfigs; c++)
		for (size_t k = 0; k < s->nkeys; k++) {
			const char *v = s->values[c * s->nkeys + k];
			const char *why = v ? value_problem(v) : "is missing";

			if (why)
				return ks_err_set(err, -EINVAL, "configuration %zu: the value "
						  "of %s %s; %s", c, s->keys[k], why,
						  value_accepted);
			if (s->is_int && s->is_int[c * s->nkeys + k] && !reads_as_int(v))
				return ks_err_set(err, -EINVAL, "configuration %zu: the value "
						  "of %s, '%.80s', is marked as an integer but "
						  "is not one", c, s->keys[k], v);
		}
	return 0;
}

void ks_tune_space_label(const struct ks_tune_space *s, size_t c, char *buf,
			 size_t size)
{
	size_t used = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (size_t k = 0; k < s->nkeys && used < size; k++) {
		int n = snprintf(buf + used, size - used, "%s%s=%s", k ? " " : "",
				 s->keys[k], s->values[c * s->nkeys + k]);

		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* ------------------------------------------------------------------ */
/* Building a space                                                    */
/* ------------------------------------------------------------------ */

void ks_tune_space_free(struct ks_tune_space *s)
{
	if (!s)
		return;
	for (size_t k = 0; k < s->nkeys && s->keys; k++)
		free(s->keys[k]);
	for (size_t i = 0; i < s->nkeys * s->nconfigs && s->values; i++)
		free(s->values[i]);
	free(s->keys);
	free(s->values);
	free(s->is_int);
	free(s);
}

static struct ks_tune_space *space_alloc(size_t nkeys, size_t nconfigs)
{
	struct ks_tune_space *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->keys = calloc(nkeys, sizeof(*s->keys));
	s->values = calloc(nkeys * nconfigs, sizeof(*s->values));
	s->is_int = calloc(nkeys * nconfigs, 1);
	s->nkeys = nkeys;
	s->nconfigs = nconfigs;
	if (!s->keys || !s->values || !s->is_int) {
		ks_tune_space_free(s);
		return NULL;
	}
	return s;
}

/* A JSON value as a configuration's value: its text and whether it is an
 * integer.  where says where it is, for the message. */
static int take_value(const json_t *j, const char *name, const char *where,
		      char **text, unsigned char *is_int, struct ks_err *err)
{
	const char *why;
	char buf[32];

	if (json_is_integer(j)) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		*text = strdup(buf);
		*is_int = 1;
	} else if (json_is_string(j)) {
		const char *v = json_string_value(j);

		why = strlen(v) == json_string_length(j) ? value_problem(v)
							  : "contains a NUL character";
		if (why)
			return ks_err_set(err, -EINVAL, "%s: %s %s; %s", name, where, why,
					  value_accepted);
		*text = strdup(v);
		*is_int = 0;
	} else {
		const char *what = json_is_real(j) ? "a number that is not an integer"
				   : json_is_boolean(j) ? "a boolean"
				   : json_is_null(j) ? "null"
				   : json_is_array(j) ? "a list" : "an object";

		return ks_err_set(err, -EINVAL, "%s: %s is %s; accepted: an integer or a "
				  "string", name, where, what);
	}
	if (!*text)
		return ks_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

static int check_key(const char *name, const char *key, const char *where,
		     struct ks_err *err)
{
	if (!ks_tune_is_ident(key, strlen(key)) || strlen(key) > KS_TUNE_MAX_KEY)
		return ks_err_set(err, -EINVAL, "%s: %s: key \"%.80s\" is not a name; "
				  "accepted: a C identifier of 1 to %d characters (the "
				  "name on the source's tunable line)", name, where, key,
				  KS_TUNE_MAX_KEY);
	return 0;
}

/* [{"A": 1, "B": 2}, ...] */
static int from_list(json_t *root, const char *name, struct ks_tune_space **out,
		     struct ks_err *err)
{
	size_t n = json_array_size(root), nkeys;
	json_t *first = json_array_get(root, 0), *v;
	struct ks_tune_space *s;
	const char *key;
	char where[96];
	int rc;

	if (n == 0)
		return ks_err_set(err, -EINVAL, "%s: the space is an empty list; accepted: "
				  "a list of configurations such as [{\"TILE\": 32}], or "
				  "an object of lists such as {\"TILE\": [16, 32]}", name);
	if (n > KS_TUNE_MAX_CONFIGS)
		return ks_err_set(err, -EINVAL, "%s: the space has %zu configurations; "
				  "accepted: at most %d", name, n, KS_TUNE_MAX_CONFIGS);
	for (size_t c = 0; c < n; c++) {
		json_t *o = json_array_get(root, c);

		if (!json_is_object(o) || json_object_size(o) == 0)
			return ks_err_set(err, -EINVAL, "%s: configuration %zu is %s; "
					  "accepted: an object of keys and values such "
					  "as {\"TILE\": 32}", name, c,
					  json_is_object(o) ? "an empty object"
					  : "not an object");
	}
	nkeys = json_object_size(first);
	if (nkeys > KS_TUNE_MAX_KEYS)
		return ks_err_set(err, -EINVAL, "%s: configuration 0 has %zu keys; "
				  "accepted: at most %d", name, nkeys, KS_TUNE_MAX_KEYS);
	s = space_alloc(nkeys, n);
	if (!s)
		return ks_err_set(err, -ENOMEM, "out of memory");
	{
		size_t k = 0;

		json_object_foreach(first, key, v) {
			snprintf(where, sizeof(where), "configuration 0");
			if ((rc = check_key(name, key, where, err)))
				goto fail;
			if (!(s->keys[k++] = strdup(key))) {
				rc = ks_err_set(err, -ENOMEM, "out of memory");
				goto fail;
			}
		}
	}
	for (size_t c = 0; c < n; c++) {
		json_t *o = json_array_get(root, c);

		if (json_object_size(o) != nkeys)
			goto keys_differ;
		for (size_t k = 0; k < nkeys; k++) {
			const json_t *jv = json_object_get(o, s->keys[k]);

			if (!jv)
				goto keys_differ;
			snprintf(where, sizeof(where), "configuration %zu: the value of %s",
				 c, s->keys[k]);
			if ((rc = take_value(jv, name, where, &s->values[c * nkeys + k],
					     &s->is_int[c * nkeys + k], err)))
				goto fail;
		}
		continue;
keys_differ:
		{
			char have[512] = "", want[512] = "";
			size_t used = 0;

			json_object_foreach(o, key, v) {
				int m = snprintf(have + used, sizeof(have) - used, "%s%s",
						 used ? ", " : "", key);

				if (m < 0 || (size_t)m >= sizeof(have) - used)
					break;
				used += (size_t)m;
			}
			used = 0;
			for (size_t k = 0; k < nkeys; k++) {
				int m = snprintf(want + used, sizeof(want) - used, "%s%s",
						 k ? ", " : "", s->keys[k]);

				if (m < 0 || (size_t)m >= sizeof(want) - used)
					break;
				used += (size_t)m;
			}
			rc = ks_err_set(err, -EINVAL, "%s: configuration %zu has the keys "
					"%s, configuration 0 has %s; accepted: the same keys "
					"in every configuration", name, c, have, want);
			goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	ks_tune_space_free(s);
	return rc;
}

/* {"A": [1, 2], "B": [3]}: the cartesian product, A varying slowest. */
static int from_product(json_t *root, const char *name,
			struct ks_tune_space **out, struct ks_err *err)
{
	size_t nkeys = json_object_size(root), total = 1, k = 0;
	struct ks_tune_space *s;
	json_t *lists[KS_TUNE_MAX_KEYS];
	const char *key;
	json_t *v;
	int rc;

	if (nkeys == 0)
		return ks_err_set(err, -EINVAL, "%s: the space is an empty object; accepted: "
				  "an object of lists such as {\"TILE\": [16, 32]}, or a list "
				  "of configurations such as [{\"TILE\": 32}]", name);
	if (nkeys > KS_TUNE_MAX_KEYS)
		return ks_err_set(err, -EINVAL, "%s: the space has %zu keys; accepted: at "
				  "most %d", name, nkeys, KS_TUNE_MAX_KEYS);
	json_object_foreach(root, key, v) {
		size_t n = json_array_size(v);

		if ((rc = check_key(name, key, "the space", err)))
			return rc;
		if (!json_is_array(v) || n == 0)
			return ks_err_set(err, -EINVAL, "%s: the values of %s are %s; "
					  "accepted: a list of one or more integers or "
					  "strings, such as [16, 32]", name, key,
					  json_is_array(v) ? "an empty list" : "not a list");
		if (total > KS_TUNE_MAX_CONFIGS / n)
			return ks_err_set(err, -EINVAL, "%s: the space has more than %d "
					  "configurations (the product of the lists' "
					  "lengths); accepted: at most %d", name,
					  KS_TUNE_MAX_CONFIGS, KS_TUNE_MAX_CONFIGS);
		total *= n;
		lists[k++] = v;
	}
	s = space_alloc(nkeys, total);
	if (!s)
		return ks_err_set(err, -ENOMEM, "out of memory");
	k = 0;
	json_object_foreach(root, key, v) {
		if (!(s->keys[k++] = strdup(key))) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
	}
	/* Each list's values once, checked, then copied into every row. */
	for (size_t c = 0; c < total; c++) {
		size_t rest = c;

		for (size_t kk = nkeys; kk-- > 0;) {
			size_t n = json_array_size(lists[kk]), i = rest % n;
			char where[128];

			rest /= n;
			snprintf(where, sizeof(where), "%s[%zu]", s->keys[kk], i);
			if ((rc = take_value(json_array_get(lists[kk], i), name, where,
					     &s->values[c * nkeys + kk],
					     &s->is_int[c * nkeys + kk], err)))
				goto fail;
		}
	}
	*out = s;
	return 0;
fail:
	ks_tune_space_free(s);
	return rc;
}

static int space_parse(const char *text, size_t len, const char *name,
		       struct ks_tune_space **out, struct ks_err *err)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	*out = NULL;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return ks_err_set(err, -EINVAL, "%s: invalid JSON at line %d, column %d: "
				  "%s; accepted: a list of configurations such as "
				  "[{\"TILE\": 32}], or an object of lists such as "
				  "{\"TILE\": [16, 32]}", name, jerr.line, jerr.column,
				  jerr.text);
	if (json_is_array(root))
		rc = from_list(root, name, out, err);
	else if (json_is_object(root))
		rc = from_product(root, name, out, err);
	else
		rc = ks_err_set(err, -EINVAL, "%s: the space is not a list or an object; "
				"accepted: a list of configurations such as "
				"[{\"TILE\": 32}], or an object of lists such as "
				"{\"TILE\": [16, 32]}", name);
	json_decref(root);
	if (rc == 0 && (rc = ks_tune_space_check(*out, err)) != 0) {
		ks_tune_space_free(*out);
		*out = NULL;
	}
	return rc;
}

static void copy_err(const struct ks_err *e, char *err, size_t errsize)
{
	if (err && errsize)
		snprintf(err, errsize, "%s", e->msg);
}

int ks_tune_space_parse(const char *text, size_t len, const char *name,
			struct ks_tune_space **out, char *err, size_t errsize)
{
	struct ks_err e;
	int rc;

	ks_err_clear(&e);
	rc = space_parse(text, len, name ? name : "the space", out, &e);
	if (rc)
		copy_err(&e, err, errsize);
	return rc;
}

int ks_tune_space_load(const char *path, struct ks_tune_space **out, char *err,
		       size_t errsize)
{
	struct ks_err e;
	char *data = NULL;
	size_t size = 0;
	int rc;

	ks_err_clear(&e);
	*out = NULL;
	rc = ks_read_file_at(AT_FDCWD, path, 0, MAX_SPACE_FILE, &data, &size, &e);
	if (rc == 0)
		rc = space_parse(data, size, path, out, &e);
	else if (rc != -ENOMEM)
		rc = -EINVAL;
	free(data);
	if (rc)
		copy_err(&e, err, errsize);
	return rc;
}
