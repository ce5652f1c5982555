/*
 * NVTX ranges as user ranges: libkscope-op.so is also an NVTX injection
 * library, so that a program marking its ranges with NVTX (as NVIDIA's
 * libraries and PyTorch do) is seen by kscope op as if it had called
 * kscope_range_start/end (oprt_range.c).
 *
 * NVTX (v3 is header-only; v2 is libnvToolsExt.so; both work the same
 * way) reads NVTX_INJECTION64_PATH on the program's first NVTX call,
 * dlopens that library and calls its InitializeInjectionNvtx2 with a
 * function that hands out NVTX's export tables.  kscope op sets the
 * variable to this library's own path when ranges are on (--mstx on);
 * the library is already loaded (preloaded), so dlopen gives this very
 * copy.  InitializeInjectionNvtx2 fills in NVTX's function pointers for
 * the ranges and returns 1; anything it does not fill in NVTX turns into
 * a no-op.  When ranges mean nothing in this process (the runtime is off,
 * or neither --mstx nor range replay), it returns 0 and NVTX turns every
 * call into a no-op: the program runs as without a tool.
 *
 * The mapping (every domain's ranges count, under their message alone):
 *   push(name)   kscope range name; its id on this thread's stack for the
 *                domain; returns the range's level (0 outermost)
 *   pop          ends the top of this thread's stack for the domain;
 *                returns the level of the range ended, -1 when none
 *   start(name)  kscope range name; its id is the nvtxRangeId_t
 *   end(id)      ends kscope range id
 * A name is the message when it is ASCII, registered (the strings this
 * file hands out live as long as the process) or wide (as UTF-8), else
 * "(unnamed)".  Ranges a thread still has pushed when it exits end then.
 * A forked child keeps its thread's stacks (the ranges in them are the
 * parent's: ending them in the child does nothing).
 *
 * Only NVTX's binary interface is used, declared below from its
 * documentation (nvToolsExt.h, nvtxDetail/nvtxTypes.h), so that kscope
 * builds without the CUDA toolkit; where the build found the toolkit's
 * nvtx3 headers, static asserts check the declarations against them.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "oprt_int.h"

/* ------------------------------------------------------------------ */
/* NVTX's binary interface                                             */
/* ------------------------------------------------------------------ */

/* Export tables (NvtxExportTableID). */
#define NVTXABI_ETID_CALLBACKS 1
#define NVTXABI_ETID_VERSIONINFO 3
/* Callback modules (NvtxCallbackModule). */
#define NVTXABI_MODULE_CORE 1
#define NVTXABI_MODULE_CORE2 5
/* The CORE module's callbacks (NvtxCallbackIdCore). */
#define NVTXABI_CORE_RANGE_START_EX 4
#define NVTXABI_CORE_RANGE_START_A 5
#define NVTXABI_CORE_RANGE_START_W 6
#define NVTXABI_CORE_RANGE_END 7
#define NVTXABI_CORE_RANGE_PUSH_EX 8
#define NVTXABI_CORE_RANGE_PUSH_A 9
#define NVTXABI_CORE_RANGE_PUSH_W 10
#define NVTXABI_CORE_RANGE_POP 11
/* The CORE2 (domain) module's callbacks (NvtxCallbackIdCore2). */
#define NVTXABI_CORE2_RANGE_START_EX 2
#define NVTXABI_CORE2_RANGE_END 3
#define NVTXABI_CORE2_RANGE_PUSH_EX 4
#define NVTXABI_CORE2_RANGE_POP 5
#define NVTXABI_CORE2_REGISTER_STRING_A 10
#define NVTXABI_CORE2_REGISTER_STRING_W 11
#define NVTXABI_CORE2_DOMAIN_CREATE_A 12
#define NVTXABI_CORE2_DOMAIN_CREATE_W 13
/* nvtxMessageType_t */
#define NVTXABI_MESSAGE_ASCII 1
#define NVTXABI_MESSAGE_UNICODE 2
#define NVTXABI_MESSAGE_REGISTERED 3
/* The NVTX version this file was written against (NVTX_VERSION). */
#define NVTXABI_VERSION 3

typedef void (*nvtxabi_fn)(void);        /* NvtxFunctionPointer */
typedef const void *(*nvtxabi_get_export_table)(uint32_t id);

/* NvtxExportTableCallbacks: module -> its table, an array of pointers to
 * NVTX's function pointers, indexed by callback id; *size is how many
 * entries there are (ids below it are valid). */
struct nvtxabi_callbacks {
	size_t struct_size;
	int (*get_module_function_table)(int module, nvtxabi_fn ***table, unsigned *size);
};

/* NvtxExportTableVersionInfo */
struct nvtxabi_version_info {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*set_injection_version)(uint32_t version);
};

/* nvtxEventAttributes_t (v2; v1 has the same layout). */
struct nvtxabi_event_attr {
	uint16_t version;
	uint16_t size;                    /* of the struct the program filled in */
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	union {
		uint64_t u64;
		double d;
	} payload;
	int32_t message_type;             /* NVTXABI_MESSAGE_* */
	union {
		const char *ascii;
		const wchar_t *unicode;
		const void *registered;   /* a handle this file handed out */
	} message;
};

#ifdef KS_OPRT_HAVE_NVTX_HEADERS
/* The toolkit's headers, for the checks only (no implementation). */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#define NVTXABI_SAME_OFFSET(ours, theirs)                                            \
	_Static_assert(offsetof(struct nvtxabi_event_attr, ours) ==                    \
			       offsetof(nvtxEventAttributes_t, theirs),                \
		       "nvtxEventAttributes_t." #theirs " moved")
_Static_assert(sizeof(struct nvtxabi_event_attr) == sizeof(nvtxEventAttributes_t),
	       "nvtxEventAttributes_t's size changed");
NVTXABI_SAME_OFFSET(size, size);
NVTXABI_SAME_OFFSET(payload, payload);
NVTXABI_SAME_OFFSET(message_type, messageType);
NVTXABI_SAME_OFFSET(message, message);
_Static_assert(offsetof(struct nvtxabi_callbacks, get_module_function_table) ==
		       offsetof(NvtxExportTableCallbacks, GetModuleFunctionTable),
	       "NvtxExportTableCallbacks changed");
_Static_assert(offsetof(struct nvtxabi_version_info, set_injection_version) ==
		       offsetof(NvtxExportTableVersionInfo, SetInjectionNvtxVersion),
	       "NvtxExportTableVersionInfo changed");
_Static_assert(sizeof(NvtxCallbackModule) == sizeof(int), "NvtxCallbackModule is not an int");
_Static_assert(NVTXABI_ETID_CALLBACKS == NVTX_ETID_CALLBACKS &&
		       NVTXABI_ETID_VERSIONINFO == NVTX_ETID_VERSIONINFO,
	       "export table ids");
_Static_assert(NVTXABI_MODULE_CORE == NVTX_CB_MODULE_CORE &&
		       NVTXABI_MODULE_CORE2 == NVTX_CB_MODULE_CORE2,
	       "module ids");
_Static_assert(NVTXABI_CORE_RANGE_START_EX == NVTX_CBID_CORE_RangeStartEx &&
		       NVTXABI_CORE_RANGE_START_A == NVTX_CBID_CORE_RangeStartA &&
		       NVTXABI_CORE_RANGE_START_W == NVTX_CBID_CORE_RangeStartW &&
		       NVTXABI_CORE_RANGE_END == NVTX_CBID_CORE_RangeEnd &&
		       NVTXABI_CORE_RANGE_PUSH_EX == NVTX_CBID_CORE_RangePushEx &&
		       NVTXABI_CORE_RANGE_PUSH_A == NVTX_CBID_CORE_RangePushA &&
		       NVTXABI_CORE_RANGE_PUSH_W == NVTX_CBID_CORE_RangePushW &&
		       NVTXABI_CORE_RANGE_POP == NVTX_CBID_CORE_RangePop,
	       "CORE callback ids");
_Static_assert(NVTXABI_CORE2_RANGE_START_EX == NVTX_CBID_CORE2_DomainRangeStartEx &&
		       NVTXABI_CORE2_RANGE_END == NVTX_CBID_CORE2_DomainRangeEnd &&
		       NVTXABI_CORE2_RANGE_PUSH_EX == NVTX_CBID_CORE2_DomainRangePushEx &&
		       NVTXABI_CORE2_RANGE_POP == NVTX_CBID_CORE2_DomainRangePop &&
		       NVTXABI_CORE2_REGISTER_STRING_A == NVTX_CBID_CORE2_DomainRegisterStringA &&
		       NVTXABI_CORE2_REGISTER_STRING_W == NVTX_CBID_CORE2_DomainRegisterStringW &&
		       NVTXABI_CORE2_DOMAIN_CREATE_A == NVTX_CBID_CORE2_DomainCreateA &&
		       NVTXABI_CORE2_DOMAIN_CREATE_W == NVTX_CBID_CORE2_DomainCreateW,
	       "CORE2 callback ids");
_Static_assert(NVTXABI_MESSAGE_ASCII == NVTX_MESSAGE_TYPE_ASCII &&
		       NVTXABI_MESSAGE_UNICODE == NVTX_MESSAGE_TYPE_UNICODE &&
		       NVTXABI_MESSAGE_REGISTERED == NVTX_MESSAGE_TYPE_REGISTERED,
	       "message types");
_Static_assert(NVTXABI_VERSION == NVTX_VERSION, "NVTX's version changed: check the ABI");
_Static_assert(sizeof(nvtxRangeId_t) == sizeof(uint64_t), "nvtxRangeId_t");
#undef NVTXABI_SAME_OFFSET
#endif

/* ------------------------------------------------------------------ */
/* Names: registered strings and domains                               */
/* ------------------------------------------------------------------ */

#define NAME_BUCKETS 64
#define UNNAMED "(unnamed)"

/* An interned string: a registered string's or a domain's handle is a
 * pointer to one.  Never freed: the program may use a handle until it
 * exits. */
struct nvtx_name {
	struct nvtx_name *next;
	char text[];                      /* UTF-8 */
};

/* One thread's push/pop stack in one domain. */
struct nvtx_stack {
	const void *domain;               /* NULL: the global domain */
	uint64_t *ids;                    /* kscope range ids, outermost first */
	size_t n, cap;
};

/* A thread's stacks, one per domain it pushed in (owned by the thread's
 * key; freed when the thread exits). */
struct nvtx_thread {
	struct nvtx_stack *stacks;
	size_t n, cap;
};

/*
 * This file's state.  It must be process-wide: NVTX calls the functions
 * below with no context of ours, and every NVTX instance of the process
 * (each library built with the v3 headers has its own) shares it.
 */
static struct {
	pthread_mutex_t lock;             /* strings, domains */
	struct nvtx_name *strings[NAME_BUCKETS];
	struct nvtx_name *domains[NAME_BUCKETS];
	pthread_once_t key_once, fork_once;
	pthread_key_t key;                /* struct nvtx_thread */
	bool key_ok;
} nvtx = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.key_once = PTHREAD_ONCE_INIT,
	.fork_once = PTHREAD_ONCE_INIT,
};

/* A fork while another thread holds the lock must not leave it locked in
 * the child (which goes on using NVTX): the lock is held across fork. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&nvtx.lock);
}

static void fork_done(void)
{
	pthread_mutex_unlock(&nvtx.lock);
}

static void fork_register(void)
{
	pthread_atfork(fork_prepare, fork_done, fork_done);
}

/* The interned copy of text (UTF-8) in table, made if need be; NULL when
 * out of memory. */
static struct nvtx_name *name_intern(struct nvtx_name **table, const char *text)
{
	uint32_t h = 2166136261u;
	struct nvtx_name *nm;
	size_t len = strlen(text);
	int saved = errno;

	for (const char *p = text; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	pthread_mutex_lock(&nvtx.lock);
	for (nm = table[h % NAME_BUCKETS]; nm; nm = nm->next)
		if (strcmp(nm->text, text) == 0)
			goto out;
	nm = malloc(sizeof(*nm) + len + 1);
	if (!nm)
		goto out;
	memcpy(nm->text, text, len + 1);
	nm->next = table[h % NAME_BUCKETS];
	table[h % NAME_BUCKETS] = nm;
out:
	pthread_mutex_unlock(&nvtx.lock);
	errno = saved;
	return nm;
}

/* A wide string (UTF-32 on Linux) as UTF-8 into out (size bytes, cut at
 * a character's boundary); characters that are not Unicode scalar values
 * become '?'. */
static void wide_to_utf8(const wchar_t *w, char *out, size_t size)
{
	size_t n = 0;

	for (; *w; w++) {
		uint32_t c = (uint32_t)*w;
		unsigned char b[4];
		size_t k;

		if (c >= 0xD800 && (c <= 0xDFFF || c > 0x10FFFF))
			c = '?';
		if (c < 0x80) {
			b[0] = (unsigned char)c;
			k = 1;
		} else if (c < 0x800) {
			b[0] = (unsigned char)(0xC0 | c >> 6);
			b[1] = (unsigned char)(0x80 | (c & 0x3F));
			k = 2;
		} else if (c < 0x10000) {
			b[0] = (unsigned char)(0xE0 | c >> 12);
			b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
			b[2] = (unsigned char)(0x80 | (c & 0x3F));
			k = 3;
		} else {
			b[0] = (unsigned char)(0xF0 | c >> 18);
			b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
			b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
			b[3] = (unsigned char)(0x80 | (c & 0x3F));
			k = 4;
		}
		if (n + k >= size)
			break;
		memcpy(out + n, b, k);
		n += k;
	}
	out[n] = '\0';
}

/* The range name a message gives: ascii itself, or wide converted into
 * buf (size bytes); "(unnamed)" for none or an empty one. */
static const char *name_of(const char *ascii, const wchar_t *wide, char *buf, size_t size)
{
	if (wide) {
		wide_to_utf8(wide, buf, size);
		ascii = buf;
	}
	return ascii && *ascii ? ascii : UNNAMED;
}

/* The range name of event attributes a (see name_of). */
static const char *attr_name(const struct nvtxabi_event_attr *a, char *buf, size_t size)
{
	const size_t need = offsetof(struct nvtxabi_event_attr, message) + sizeof(a->message);
	const struct nvtx_name *nm;

	if (!a || a->size < need)
		return UNNAMED;
	switch (a->message_type) {
	case NVTXABI_MESSAGE_ASCII:
		return name_of(a->message.ascii, NULL, buf, size);
	case NVTXABI_MESSAGE_UNICODE:
		if (!a->message.unicode)
			return UNNAMED;
		return name_of(NULL, a->message.unicode, buf, size);
	case NVTXABI_MESSAGE_REGISTERED:
		nm = a->message.registered;
		return nm ? name_of(nm->text, NULL, buf, size) : UNNAMED;
	default:
		return UNNAMED;
	}
}

/* ------------------------------------------------------------------ */
/* Push and pop: per thread, per domain                                */
/* ------------------------------------------------------------------ */

/* At a thread's exit: the ranges it still has pushed end (no one can pop
 * them any more), and its stacks are freed. */
static void thread_exit(void *p)
{
	struct nvtx_thread *t = p;

	for (size_t i = 0; i < t->n; i++) {
		struct nvtx_stack *s = &t->stacks[i];

		while (s->n)
			ks_oprt_range_end(s->ids[--s->n]);
		free(s->ids);
	}
	free(t->stacks);
	free(t);
}

static void key_make(void)
{
	nvtx.key_ok = pthread_key_create(&nvtx.key, thread_exit) == 0;
}

/* The calling thread's stack for domain, made if make; NULL when there is
 * none (or no memory). */
static struct nvtx_stack *stack_of(const void *domain, bool make)
{
	struct nvtx_thread *t;
	struct nvtx_stack *s;

	pthread_once(&nvtx.key_once, key_make);
	if (!nvtx.key_ok)
		return NULL;
	t = pthread_getspecific(nvtx.key);
	if (!t) {
		if (!make || !(t = calloc(1, sizeof(*t))))
			return NULL;
		if (pthread_setspecific(nvtx.key, t) != 0) {
			free(t);
			return NULL;
		}
	}
	for (size_t i = 0; i < t->n; i++)
		if (t->stacks[i].domain == domain)
			return &t->stacks[i];
	if (!make)
		return NULL;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 4;
		struct nvtx_stack *more = realloc(t->stacks, cap * sizeof(*more));

		if (!more)
			return NULL;
		t->stacks = more;
		t->cap = cap;
	}
	s = &t->stacks[t->n++];
	memset(s, 0, sizeof(*s));
	s->domain = domain;
	return s;
}

/* Starts range name and pushes it on this thread's stack for domain: the
 * level of the range (0 outermost), or -1 when there is no memory (then
 * no range starts). */
static int range_push(const void *domain, const char *name)
{
	struct nvtx_stack *s = stack_of(domain, true);
	int saved = errno;

	if (!s)
		goto fail;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 8;
		uint64_t *more = realloc(s->ids, cap * sizeof(*more));

		if (!more)
			goto fail;
		s->ids = more;
		s->cap = cap;
	}
	if (s->n >= INT32_MAX)
		goto fail;
	s->ids[s->n] = ks_oprt_range_start(name);
	errno = saved;
	return (int)s->n++;
fail:
	errno = saved;
	return -1;
}

/* Ends the range on top of this thread's stack for domain: its level, or
 * -1 when the stack is empty. */
static int range_pop(const void *domain)
{
	struct nvtx_stack *s = stack_of(domain, false);

	if (!s || s->n == 0)
		return -1;
	ks_oprt_range_end(s->ids[--s->n]);
	return (int)s->n;
}

/* ------------------------------------------------------------------ */
/* The callbacks NVTX calls                                            */
/* ------------------------------------------------------------------ */

/* Names are cut to kscope's 255 bytes anyway (struct ks_oprt_open_range). */
#define NAME_MAX_BYTES 256

static uint64_t cb_range_start_a(const char *message)
{
	return ks_oprt_range_start(name_of(message, NULL, NULL, 0));
}

static uint64_t cb_range_start_w(const wchar_t *message)
{
	char buf[NAME_MAX_BYTES];

	return ks_oprt_range_start(message ? name_of(NULL, message, buf, sizeof(buf)) : UNNAMED);
}

static uint64_t cb_range_start_ex(const struct nvtxabi_event_attr *a)
{
	char buf[NAME_MAX_BYTES];

	return ks_oprt_range_start(attr_name(a, buf, sizeof(buf)));
}

static void cb_range_end(uint64_t id)
{
	ks_oprt_range_end(id);
}

static int cb_range_push_a(const char *message)
{
	return range_push(NULL, name_of(message, NULL, NULL, 0));
}

static int cb_range_push_w(const wchar_t *message)
{
	char buf[NAME_MAX_BYTES];

	return range_push(NULL, message ? name_of(NULL, message, buf, sizeof(buf)) : UNNAMED);
}

static int cb_range_push_ex(const struct nvtxabi_event_attr *a)
{
	char buf[NAME_MAX_BYTES];

	return range_push(NULL, attr_name(a, buf, sizeof(buf)));
}

static int cb_range_pop(void)
{
	return range_pop(NULL);
}

/* Domain handles are this file's interned names (NULL: the global
 * domain); start/end ids are kscope's whatever the domain. */
static uint64_t cb_domain_range_start_ex(const void *domain, const struct nvtxabi_event_attr *a)
{
	(void)domain;
	return cb_range_start_ex(a);
}

static void cb_domain_range_end(const void *domain, uint64_t id)
{
	(void)domain;
	ks_oprt_range_end(id);
}

static int cb_domain_range_push_ex(const void *domain, const struct nvtxabi_event_attr *a)
{
	char buf[NAME_MAX_BYTES];

	return range_push(domain, attr_name(a, buf, sizeof(buf)));
}

static int cb_domain_range_pop(const void *domain)
{
	return range_pop(domain);
}

/* Registered strings are interned across domains: the same text gives
 * the same handle.  NULL when out of memory (a range that uses it is
 * then unnamed). */
static const void *cb_register_string_a(const void *domain, const char *s)
{
	(void)domain;
	return s ? name_intern(nvtx.strings, s) : NULL;
}

static const void *cb_register_string_w(const void *domain, const wchar_t *s)
{
	char buf[NAME_MAX_BYTES];

	(void)domain;
	if (!s)
		return NULL;
	wide_to_utf8(s, buf, sizeof(buf));
	return name_intern(nvtx.strings, buf);
}

/* A domain is its name: creating one twice gives the same handle (and
 * the same push/pop stacks).  Domains are not destroyed (nvtxDomainDestroy
 * stays a no-op): a thread may still hold a stack for one. */
static const void *cb_domain_create_a(const char *name)
{
	return name_intern(nvtx.domains, name ? name : "");
}

static const void *cb_domain_create_w(const wchar_t *name)
{
	char buf[NAME_MAX_BYTES];

	if (!name)
		return name_intern(nvtx.domains, "");
	wide_to_utf8(name, buf, sizeof(buf));
	return name_intern(nvtx.domains, buf);
}

/* One callback: module, id and the function. */
struct nvtx_cb {
	int module, id;
	nvtxabi_fn fn;
};

#define CB(m, i, f) { NVTXABI_MODULE_##m, NVTXABI_##m##_##i, (nvtxabi_fn)(f) }
static const struct nvtx_cb callbacks[] = {
	CB(CORE, RANGE_START_EX, cb_range_start_ex),
	CB(CORE, RANGE_START_A, cb_range_start_a),
	CB(CORE, RANGE_START_W, cb_range_start_w),
	CB(CORE, RANGE_END, cb_range_end),
	CB(CORE, RANGE_PUSH_EX, cb_range_push_ex),
	CB(CORE, RANGE_PUSH_A, cb_range_push_a),
	CB(CORE, RANGE_PUSH_W, cb_range_push_w),
	CB(CORE, RANGE_POP, cb_range_pop),
	CB(CORE2, RANGE_START_EX, cb_domain_range_start_ex),
	CB(CORE2, RANGE_END, cb_domain_range_end),
	CB(CORE2, RANGE_PUSH_EX, cb_domain_range_push_ex),
	CB(CORE2, RANGE_POP, cb_domain_range_pop),
	CB(CORE2, REGISTER_STRING_A, cb_register_string_a),
	CB(CORE2, REGISTER_STRING_W, cb_register_string_w),
	CB(CORE2, DOMAIN_CREATE_A, cb_domain_create_a),
	CB(CORE2, DOMAIN_CREATE_W, cb_domain_create_w),
};
#undef CB

/* ------------------------------------------------------------------ */
/* The injection's entry point                                         */
/* ------------------------------------------------------------------ */

/* Exported for NVTX, which finds it with dlsym (declared here only). */
KS_OPRT_EXPORT int InitializeInjectionNvtx2(nvtxabi_get_export_table get);

/*
 * Called by each NVTX instance of the process once, on its first call:
 * fills in the callbacks of the modules the instance has (an older NVTX
 * has fewer; what it lacks is left out) and returns 1, or returns 0 (NVTX
 * then makes every call a no-op) when ranges mean nothing in this process
 * or the instance offers no callbacks table.
 */
KS_OPRT_EXPORT int InitializeInjectionNvtx2(nvtxabi_get_export_table get)
{
	const struct ks_oprt_config *c = &ks_oprt.cfg;
	const struct nvtxabi_callbacks *cbs;
	const struct nvtxabi_version_info *vi;
	int saved = errno, attached = 0;

	if (!get || !ks_oprt_active() || (!c->mstx && c->mode != KS_OPRT_MODE_RANGE))
		goto out;
	cbs = get(NVTXABI_ETID_CALLBACKS);
	if (!cbs || cbs->struct_size < sizeof(*cbs) || !cbs->get_module_function_table)
		goto out;
	for (size_t i = 0; i < sizeof(callbacks) / sizeof(callbacks[0]); i++) {
		const struct nvtx_cb *cb = &callbacks[i];
		nvtxabi_fn **table = NULL;
		unsigned size = 0;

		if (!cbs->get_module_function_table(cb->module, &table, &size) || !table ||
		    (unsigned)cb->id >= size || !table[cb->id])
			continue;
		*table[cb->id] = cb->fn;
		attached = 1;
	}
	if (attached)
		pthread_once(&nvtx.fork_once, fork_register);
	/* NVTX asks tools to say which version they were written for. */
	vi = get(NVTXABI_ETID_VERSIONINFO);
	if (attached && vi && vi->struct_size >= sizeof(*vi) && vi->set_injection_version)
		vi->set_injection_version(NVTXABI_VERSION);
out:
	errno = saved;
	return attached;
}
