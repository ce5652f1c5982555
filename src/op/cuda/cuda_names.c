/*
 * Kernel base names for kscope op's CUDA backend (cuda_logic.h): the
 * identifier --kernel-name matches, taken from the driver's (mangled)
 * name without a demangler, so that it does not depend on the program
 * having libstdc++ loaded.  Only the front of an Itanium-mangled name is
 * parsed (the function's nested name); what follows (the parameter
 * types) is never needed.
 */
#include <ctype.h>
#include <string.h>

#include "cuda_logic.h"

static void copy_out(const char *s, size_t len, char *out, size_t size)
{
	if (size == 0)
		return;
	if (len >= size)
		len = size - 1;
	memcpy(out, s, len);
	out[len] = '\0';
}

/* <number><identifier> at *p: the identifier's start and length, *p past
 * it; false when there is none. */
static bool source_name(const char **p, const char **id, size_t *len)
{
	size_t n = 0;

	if (!isdigit((unsigned char)**p))
		return false;
	while (isdigit((unsigned char)**p)) {
		n = n * 10 + (size_t)(**p - '0');
		if (n > 4096)
			return false;
		(*p)++;
	}
	if (n == 0 || strnlen(*p, n) < n)
		return false;
	*id = *p;
	*len = n;
	*p += n;
	return true;
}

/* Skips a <template-args> (I ... E) at *p.  Inside, what can hold an E
 * of its own is skipped as a unit: source names (by their length),
 * literals (L ... E), substitutions (S_, S0_, St) and template
 * parameters (T_, T0_); I, N, X, local names (Z <encoding> E), external
 * names in literals (L_Z <encoding> E) and lambda types (Ul <types> E
 * [<number>] _) open a level that E closes; unnamed types (Ut [<number>]
 * _) are a unit. */
static bool skip_template_args(const char **p)
{
	char open[64];                    /* what opened each level */
	int depth = 0;

	do {
		const char *id;
		size_t len;
		char c = **p;

		if (c == '\0')
			return false;
		if (isdigit((unsigned char)c)) {
			if (!source_name(p, &id, &len))
				return false;
			continue;
		}
		(*p)++;
		if (c == 'I' || c == 'N' || c == 'X' || c == 'Z' ||
		    (c == 'U' && **p == 'l') || (c == 'L' && (*p)[0] == '_' && (*p)[1] == 'Z')) {
			if (depth == (int)sizeof(open))
				return false;
			if (c == 'U' || c == 'L')
				*p += c == 'U' ? 1 : 2;
			open[depth++] = c;
		} else if (c == 'E') {
			if (depth == 0)
				return false;
			if (open[--depth] == 'U') {
				while (isdigit((unsigned char)**p))
					(*p)++;
				if (**p != '_')
					return false;
				(*p)++;
			}
		} else if (c == 'U' && **p == 't') {
			(*p)++;
			while (isdigit((unsigned char)**p))
				(*p)++;
			if (**p != '_')
				return false;
			(*p)++;
		} else if (c == 'L') {
			while (**p && **p != 'E')
				(*p)++;
			if (!**p)
				return false;
			(*p)++;
		} else if (c == 'S' && islower((unsigned char)**p)) {
			(*p)++;
		} else if (c == 'S' || c == 'T') {
			while (isdigit((unsigned char)**p) || isupper((unsigned char)**p))
				(*p)++;
			if (**p != '_')
				return false;
			(*p)++;
		}
	} while (depth > 0);
	return true;
}

/* The last source name of a mangled function name; false when the name
 * uses a form the parser does not know (operators, constructors,
 * substitutions in the nested name, local names). */
static bool mangled_base(const char *name, const char **id, size_t *len)
{
	const char *p = name + 2;         /* after _Z */
	bool found = false;

	if (*p != 'N')
		return source_name(&p, id, len);
	p++;
	while (*p == 'r' || *p == 'V' || *p == 'K')
		p++;                      /* CV qualifiers of a member function */
	if (p[0] == 'S' && p[1] == 't')
		p += 2;                   /* std:: */
	while (*p && *p != 'E') {
		if (*p == 'I') {
			if (!skip_template_args(&p))
				return false;
			continue;
		}
		if (!source_name(&p, id, len))
			return false;
		found = true;
	}
	return found && *p == 'E';
}

/* The identifier before the parameter list of a demangled name: the
 * list is the parenthesis that matches the name's last ')' (earlier ones
 * belong to "(anonymous namespace)" or template arguments); from there
 * backwards over template arguments to the identifier.  false when there
 * is no parameter list. */
static bool demangled_base(const char *name, const char **id, size_t *len)
{
	const char *paren = strrchr(name, ')'), *end, *start;
	int depth = 0;

	if (!paren)
		return false;
	for (;; paren--) {
		if (*paren == ')')
			depth++;
		else if (*paren == '(' && --depth == 0)
			break;
		if (paren == name)
			return false;
	}
	if (!paren)
		return false;
	end = paren;
	if (end > name && end[-1] == '>') {   /* template arguments */
		depth = 0;
		do {
			end--;
			if (*end == '>')
				depth++;
			else if (*end == '<')
				depth--;
		} while (end > name && depth > 0);
		if (depth != 0)
			return false;
	}
	start = end;
	while (start > name && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
		start--;
	if (start == end)
		return false;
	*id = start;
	*len = (size_t)(end - start);
	return true;
}

void ks_cu_base_name(const char *name, char *out, size_t size)
{
	const char *id;
	size_t len;

	if (strncmp(name, "_Z", 2) == 0 && mangled_base(name, &id, &len))
		copy_out(id, len, out, size);
	else if (strchr(name, '(') && demangled_base(name, &id, &len))
		copy_out(id, len, out, size);
	else
		copy_out(name, strlen(name), out, size);
}
