/*
 * String and memory functions of the C library, replaced inside the
 * program under kscope's Valgrind tool (this file goes into
 * vgpreload_kscope-<arch>-linux.so, which Valgrind loads into the
 * program).
 *
 * The C library's optimized versions read memory in aligned 16- or
 * 32-byte chunks and may read past the end of a string into bytes the
 * function's definition never reads.  These replacements read exactly
 * the bytes the definition reads, one at a time.  contention and
 * falseshare skip the code of preload libraries as the tool's own
 * (kst_cache.c), so with these in place the C library's string routines
 * are not counted as the program's accesses; dropping them would change
 * what those analyses count.
 *
 * No libc here: the functions are plain loops (the build disables the
 * compiler's habit of turning such loops back into library calls).
 */
#include "pub_tool_basics.h"
#include "pub_tool_redir.h"

typedef unsigned long ks_size;

#define LIBC VG_Z_LIBC_SONAME
#if defined(VGP_amd64_linux)
#define LDSO VG_Z_LD_LINUX_X86_64_SO_2
#elif defined(VGP_arm64_linux)
#define LDSO VG_Z_LD_LINUX_AARCH64_SO_1
#else
#error "kscope's Valgrind tool is built for amd64 and arm64 Linux"
#endif

/* Each macro declares and defines one replacement for one soname. */

#define KS_STRLEN(tag, so, fn)                                                 \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s);          \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s)           \
	{                                                                      \
		ks_size n = 0;                                                 \
		while (s[n])                                                   \
			n++;                                                   \
		return n;                                                      \
	}
KS_STRLEN(10010, LIBC, strlen)
KS_STRLEN(10010, LIBC, __GI_strlen)
KS_STRLEN(10010, LDSO, strlen)

#define KS_STRNLEN(tag, so, fn)                                                \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, ks_size max); \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, ks_size max)  \
	{                                                                      \
		ks_size n = 0;                                                 \
		while (n < max && s[n])                                        \
			n++;                                                   \
		return n;                                                      \
	}
KS_STRNLEN(10020, LIBC, strnlen)
KS_STRNLEN(10020, LIBC, __GI_strnlen)

#define KS_STRCHR(tag, so, fn)                                                 \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, int c);     \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, int c)      \
	{                                                                      \
		char ch = (char)c;                                             \
		for (;; s++) {                                                 \
			if (*s == ch)                                          \
				return (char *)s;                              \
			if (!*s)                                               \
				return 0;                                      \
		}                                                              \
	}
KS_STRCHR(10030, LIBC, strchr)
KS_STRCHR(10030, LIBC, __GI_strchr)
KS_STRCHR(10030, LIBC, index)
KS_STRCHR(10030, LDSO, strchr)

#define KS_STRCHRNUL(tag, so, fn)                                              \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, int c);     \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, int c)      \
	{                                                                      \
		char ch = (char)c;                                             \
		while (*s && *s != ch)                                         \
			s++;                                                   \
		return (char *)s;                                              \
	}
KS_STRCHRNUL(10040, LIBC, strchrnul)
KS_STRCHRNUL(10040, LIBC, __GI_strchrnul)

#define KS_STRRCHR(tag, so, fn)                                                \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, int c);     \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, int c)      \
	{                                                                      \
		char ch = (char)c;                                             \
		const char *last = 0;                                          \
		for (;; s++) {                                                 \
			if (*s == ch)                                          \
				last = s;                                      \
			if (!*s)                                               \
				return (char *)last;                           \
		}                                                              \
	}
KS_STRRCHR(10050, LIBC, strrchr)
KS_STRRCHR(10050, LIBC, __GI_strrchr)
KS_STRRCHR(10050, LIBC, rindex)

#define KS_MEMCHR(tag, so, fn)                                                 \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *s, int c, ks_size n); \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *s, int c, ks_size n)  \
	{                                                                      \
		const unsigned char *p = s;                                    \
		unsigned char ch = (unsigned char)c;                           \
		ks_size i;                                                     \
		for (i = 0; i < n; i++)                                        \
			if (p[i] == ch)                                        \
				return (void *)(p + i);                        \
		return 0;                                                      \
	}
KS_MEMCHR(10060, LIBC, memchr)
KS_MEMCHR(10060, LIBC, __GI_memchr)

#define KS_RAWMEMCHR(tag, so, fn)                                              \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *s, int c);     \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *s, int c)      \
	{                                                                      \
		const unsigned char *p = s;                                    \
		while (*p != (unsigned char)c)                                 \
			p++;                                                   \
		return (void *)p;                                              \
	}
KS_RAWMEMCHR(10070, LIBC, rawmemchr)
KS_RAWMEMCHR(10070, LIBC, __GI___rawmemchr)
KS_RAWMEMCHR(10070, LIBC, __rawmemchr)

#define KS_MEMRCHR(tag, so, fn)                                                \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *s, int c, ks_size n); \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *s, int c, ks_size n)  \
	{                                                                      \
		const unsigned char *p = s;                                    \
		while (n > 0) {                                                \
			n--;                                                   \
			if (p[n] == (unsigned char)c)                          \
				return (void *)(p + n);                        \
		}                                                              \
		return 0;                                                      \
	}
KS_MEMRCHR(10080, LIBC, memrchr)

#define KS_STRCMP(tag, so, fn)                                                 \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b)  \
	{                                                                      \
		const unsigned char *x = (const unsigned char *)a;             \
		const unsigned char *y = (const unsigned char *)b;             \
		while (*x && *x == *y) {                                       \
			x++;                                                   \
			y++;                                                   \
		}                                                              \
		return (int)*x - (int)*y;                                      \
	}
KS_STRCMP(10090, LIBC, strcmp)
KS_STRCMP(10090, LIBC, __GI_strcmp)
KS_STRCMP(10090, LDSO, strcmp)

#define KS_STRNCMP(tag, so, fn)                                                \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b, ks_size n); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b, ks_size n)  \
	{                                                                      \
		const unsigned char *x = (const unsigned char *)a;             \
		const unsigned char *y = (const unsigned char *)b;             \
		ks_size i;                                                     \
		for (i = 0; i < n; i++) {                                      \
			if (x[i] != y[i] || !x[i])                             \
				return (int)x[i] - (int)y[i];                  \
		}                                                              \
		return 0;                                                      \
	}
KS_STRNCMP(10100, LIBC, strncmp)
KS_STRNCMP(10100, LIBC, __GI_strncmp)

static inline int ks_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

#define KS_STRCASECMP(tag, so, fn)                                             \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b)  \
	{                                                                      \
		const unsigned char *x = (const unsigned char *)a;             \
		const unsigned char *y = (const unsigned char *)b;             \
		while (*x && ks_lower(*x) == ks_lower(*y)) {                   \
			x++;                                                   \
			y++;                                                   \
		}                                                              \
		return ks_lower(*x) - ks_lower(*y);                            \
	}
KS_STRCASECMP(10110, LIBC, strcasecmp)
KS_STRCASECMP(10110, LIBC, __GI___strcasecmp)
KS_STRCASECMP(10110, LIBC, __strcasecmp)

#define KS_STRNCASECMP(tag, so, fn)                                            \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b, ks_size n); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *a, const char *b, ks_size n)  \
	{                                                                      \
		const unsigned char *x = (const unsigned char *)a;             \
		const unsigned char *y = (const unsigned char *)b;             \
		ks_size i;                                                     \
		for (i = 0; i < n; i++) {                                      \
			if (ks_lower(x[i]) != ks_lower(y[i]) || !x[i])         \
				return ks_lower(x[i]) - ks_lower(y[i]);        \
		}                                                              \
		return 0;                                                      \
	}
KS_STRNCASECMP(10120, LIBC, strncasecmp)

#define KS_MEMCMP(tag, so, fn)                                                 \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *a, const void *b, ks_size n); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const void *a, const void *b, ks_size n)  \
	{                                                                      \
		const unsigned char *x = a, *y = b;                            \
		ks_size i;                                                     \
		for (i = 0; i < n; i++)                                        \
			if (x[i] != y[i])                                      \
				return (int)x[i] - (int)y[i];                  \
		return 0;                                                      \
	}
KS_MEMCMP(10130, LIBC, memcmp)
KS_MEMCMP(10130, LIBC, __GI_memcmp)
KS_MEMCMP(10130, LIBC, bcmp)
KS_MEMCMP(10130, LDSO, memcmp)

/* Copies byte by byte, so partly initialized data keeps its definedness
 * byte for byte; overlapping copies go backwards when needed. */
#define KS_MEMMOVE_BODY                                                        \
	unsigned char *d = dst;                                                \
	const unsigned char *s = src;                                          \
	ks_size i;                                                             \
	if (d == s || n == 0)                                                  \
		return dst;                                                    \
	if (d < s || d >= s + n) {                                             \
		for (i = 0; i < n; i++)                                        \
			d[i] = s[i];                                           \
	} else {                                                               \
		for (i = n; i > 0; i--)                                        \
			d[i - 1] = s[i - 1];                                   \
	}                                                                      \
	return dst;

#define KS_MEMCPY(tag, so, fn)                                                 \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, const void *src, ks_size n); \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, const void *src, ks_size n)  \
	{                                                                      \
		KS_MEMMOVE_BODY                                                \
	}
KS_MEMCPY(10140, LIBC, memcpy)
KS_MEMCPY(10140, LIBC, __GI_memcpy)
KS_MEMCPY(10140, LDSO, memcpy)
KS_MEMCPY(10150, LIBC, memmove)
KS_MEMCPY(10150, LIBC, __GI_memmove)

#define KS_MEMCPY_CHK(tag, so, fn)                                             \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, const void *src, ks_size n, ks_size dn); \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, const void *src, ks_size n, ks_size dn)  \
	{                                                                      \
		(void)dn;                                                      \
		KS_MEMMOVE_BODY                                                \
	}
KS_MEMCPY_CHK(10160, LIBC, __memcpy_chk)
KS_MEMCPY_CHK(10170, LIBC, __memmove_chk)

#define KS_MEMPCPY(tag, so, fn)                                                \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, const void *src, ks_size n); \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, const void *src, ks_size n)  \
	{                                                                      \
		unsigned char *d = dst;                                        \
		const unsigned char *s = src;                                  \
		ks_size i;                                                     \
		for (i = 0; i < n; i++)                                        \
			d[i] = s[i];                                           \
		return d + n;                                                  \
	}
KS_MEMPCPY(10180, LIBC, mempcpy)
KS_MEMPCPY(10180, LIBC, __GI_mempcpy)
KS_MEMPCPY(10180, LIBC, __mempcpy)
KS_MEMPCPY(10180, LDSO, mempcpy)

#define KS_MEMSET(tag, so, fn)                                                 \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, int c, ks_size n); \
	void *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(void *dst, int c, ks_size n)  \
	{                                                                      \
		unsigned char *d = dst;                                        \
		ks_size i;                                                     \
		for (i = 0; i < n; i++)                                        \
			d[i] = (unsigned char)c;                               \
		return dst;                                                    \
	}
KS_MEMSET(10190, LIBC, memset)
KS_MEMSET(10190, LIBC, __GI_memset)

#define KS_STPCPY(tag, so, fn)                                                 \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src)  \
	{                                                                      \
		while ((*dst = *src)) {                                        \
			dst++;                                                 \
			src++;                                                 \
		}                                                              \
		return dst;                                                    \
	}
KS_STPCPY(10200, LIBC, stpcpy)
KS_STPCPY(10200, LIBC, __GI_stpcpy)
KS_STPCPY(10200, LIBC, __stpcpy)

#define KS_STRCPY(tag, so, fn)                                                 \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src)  \
	{                                                                      \
		char *d = dst;                                                 \
		while ((*d = *src)) {                                          \
			d++;                                                   \
			src++;                                                 \
		}                                                              \
		return dst;                                                    \
	}
KS_STRCPY(10210, LIBC, strcpy)
KS_STRCPY(10210, LIBC, __GI_strcpy)

#define KS_STRNCPY(tag, so, fn)                                                \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src, ks_size n); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src, ks_size n)  \
	{                                                                      \
		ks_size i = 0;                                                 \
		for (; i < n && src[i]; i++)                                   \
			dst[i] = src[i];                                       \
		for (; i < n; i++)                                             \
			dst[i] = 0;                                            \
		return dst;                                                    \
	}
KS_STRNCPY(10220, LIBC, strncpy)
KS_STRNCPY(10220, LIBC, __GI_strncpy)

#define KS_STRCAT(tag, so, fn)                                                 \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src)  \
	{                                                                      \
		char *d = dst;                                                 \
		while (*d)                                                     \
			d++;                                                   \
		while ((*d = *src)) {                                          \
			d++;                                                   \
			src++;                                                 \
		}                                                              \
		return dst;                                                    \
	}
KS_STRCAT(10230, LIBC, strcat)
KS_STRCAT(10230, LIBC, __GI_strcat)

#define KS_STRNCAT(tag, so, fn)                                                \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src, ks_size n); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(char *dst, const char *src, ks_size n)  \
	{                                                                      \
		char *d = dst;                                                 \
		ks_size i;                                                     \
		while (*d)                                                     \
			d++;                                                   \
		for (i = 0; i < n && src[i]; i++)                              \
			*d++ = src[i];                                         \
		*d = 0;                                                        \
		return dst;                                                    \
	}
KS_STRNCAT(10240, LIBC, strncat)

#define KS_STRSPN(tag, so, fn, accept_if)                                      \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, const char *set); \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, const char *set)  \
	{                                                                      \
		ks_size n = 0;                                                 \
		for (; s[n]; n++) {                                            \
			const char *c = set;                                   \
			int in = 0;                                            \
			for (; *c; c++)                                        \
				if (*c == s[n]) {                              \
					in = 1;                                \
					break;                                 \
				}                                              \
			if (in != (accept_if))                                 \
				break;                                         \
		}                                                              \
		return n;                                                      \
	}
KS_STRSPN(10250, LIBC, strspn, 1)
KS_STRSPN(10260, LIBC, strcspn, 0)

#define KS_STRPBRK(tag, so, fn)                                                \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, const char *set); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *s, const char *set)  \
	{                                                                      \
		for (; *s; s++) {                                              \
			const char *c;                                         \
			for (c = set; *c; c++)                                 \
				if (*c == *s)                                  \
					return (char *)s;                      \
		}                                                              \
		return 0;                                                      \
	}
KS_STRPBRK(10270, LIBC, strpbrk)

#define KS_STRSTR(tag, so, fn)                                                 \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *h, const char *nd); \
	char *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const char *h, const char *nd)  \
	{                                                                      \
		if (!*nd)                                                      \
			return (char *)h;                                      \
		for (; *h; h++) {                                              \
			const char *a = h, *b = nd;                            \
			while (*a && *b && *a == *b) {                         \
				a++;                                           \
				b++;                                           \
			}                                                      \
			if (!*b)                                               \
				return (char *)h;                              \
		}                                                              \
		return 0;                                                      \
	}
KS_STRSTR(10280, LIBC, strstr)

#define KS_WCSLEN(tag, so, fn)                                                 \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s);           \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s)            \
	{                                                                      \
		ks_size n = 0;                                                 \
		while (s[n])                                                   \
			n++;                                                   \
		return n;                                                      \
	}
KS_WCSLEN(10290, LIBC, wcslen)

#define KS_WCSCMP(tag, so, fn)                                                 \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *a, const int *b); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *a, const int *b)  \
	{                                                                      \
		while (*a && *a == *b) {                                       \
			a++;                                                   \
			b++;                                                   \
		}                                                              \
		return *a < *b ? -1 : *a > *b;                                 \
	}
KS_WCSCMP(10300, LIBC, wcscmp)

#define KS_WCSCHR(tag, so, fn)                                                 \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, int c);       \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, int c)        \
	{                                                                      \
		for (;; s++) {                                                 \
			if (*s == c)                                           \
				return (int *)s;                               \
			if (!*s)                                               \
				return 0;                                      \
		}                                                              \
	}
KS_WCSCHR(10310, LIBC, wcschr)

#define KS_WCSCPY(tag, so, fn)                                                 \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(int *dst, const int *src);  \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(int *dst, const int *src)   \
	{                                                                      \
		int *d = dst;                                                  \
		while ((*d = *src)) {                                          \
			d++;                                                   \
			src++;                                                 \
		}                                                              \
		return dst;                                                    \
	}
KS_WCSCPY(10320, LIBC, wcscpy)

#define KS_WCSNLEN(tag, so, fn)                                                \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, ks_size max); \
	ks_size VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, ks_size max)  \
	{                                                                      \
		ks_size n = 0;                                                 \
		while (n < max && s[n])                                        \
			n++;                                                   \
		return n;                                                      \
	}
KS_WCSNLEN(10330, LIBC, wcsnlen)

#define KS_WCSNCMP(tag, so, fn)                                                \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *a, const int *b, ks_size n); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *a, const int *b, ks_size n)  \
	{                                                                      \
		ks_size i;                                                     \
		for (i = 0; i < n; i++) {                                      \
			if (a[i] != b[i])                                      \
				return a[i] < b[i] ? -1 : 1;                   \
			if (!a[i])                                             \
				return 0;                                      \
		}                                                              \
		return 0;                                                      \
	}
KS_WCSNCMP(10340, LIBC, wcsncmp)

#define KS_WCSRCHR(tag, so, fn)                                                \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, int c);       \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, int c)        \
	{                                                                      \
		const int *last = 0;                                           \
		for (;; s++) {                                                 \
			if (*s == c)                                           \
				last = s;                                      \
			if (!*s)                                               \
				return (int *)last;                            \
		}                                                              \
	}
KS_WCSRCHR(10350, LIBC, wcsrchr)

#define KS_WMEMCHR(tag, so, fn)                                                \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, int c, ks_size n); \
	int *VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *s, int c, ks_size n)  \
	{                                                                      \
		ks_size i;                                                     \
		for (i = 0; i < n; i++)                                        \
			if (s[i] == c)                                         \
				return (int *)(s + i);                         \
		return 0;                                                      \
	}
KS_WMEMCHR(10360, LIBC, wmemchr)

#define KS_WMEMCMP(tag, so, fn)                                                \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *a, const int *b, ks_size n); \
	int VG_REPLACE_FUNCTION_EZU(tag, so, fn)(const int *a, const int *b, ks_size n)  \
	{                                                                      \
		ks_size i;                                                     \
		for (i = 0; i < n; i++)                                        \
			if (a[i] != b[i])                                      \
				return a[i] < b[i] ? -1 : 1;                   \
		return 0;                                                      \
	}
KS_WMEMCMP(10370, LIBC, wmemcmp)
