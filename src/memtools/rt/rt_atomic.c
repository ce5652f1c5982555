/*
 * The atomic operations of the instrumentation interface: the compiler
 * hands every C11/C++11 atomic (and gcc's __atomic and __sync builtins)
 * to the runtime, which must perform it -- with the memory order the
 * program asked for -- and records it as an access: a load as a read,
 * everything else as a write (a read-modify-write, even a compare-exchange
 * that fails, needs the line exclusively, as the Valgrind tool counts a
 * locked instruction).
 *
 * The builtins want their memory order as a constant, so each operation
 * switches over the orders.  Orders that are not valid for an operation
 * (a release load) are made stronger, never weaker; a compare-exchange
 * whose failure order is stronger than its success order's load part
 * (allowed since C++17, refused by the builtins) gets a stronger success
 * order.  16-byte operations are compare-and-swap loops on cmpxchg16b
 * (amd64, compiled with -mcx16; libatomic, which programs built without
 * it call, uses the same instruction where the processor has it, so the
 * two stay coherent), or the builtins elsewhere.
 */
#include "rt_int.h"

enum { MO_RELAXED, MO_CONSUME, MO_ACQUIRE, MO_RELEASE, MO_ACQ_REL, MO_SEQ_CST };

/* gcc adds bits above the order (its __sync marker 1 << 15, the HLE
 * hints 1 << 16 and 1 << 17); an order not known is taken as seq_cst. */
static inline int mo_norm(int mo)
{
	mo &= 0x7fff;
	return mo > MO_SEQ_CST || mo < 0 ? MO_SEQ_CST : mo;
}

/* The success and failure orders of a compare-exchange made valid for
 * the builtins, by strengthening. */
static inline void cas_orders(int *mo, int *fmo)
{
	int s = mo_norm(*mo), f = mo_norm(*fmo);

	if (f == MO_RELEASE)
		f = MO_RELAXED;
	else if (f == MO_ACQ_REL)
		f = MO_ACQUIRE;
	if (f == MO_SEQ_CST) {
		s = MO_SEQ_CST;
	} else if (f == MO_ACQUIRE) {
		if (s == MO_RELAXED || s == MO_CONSUME)
			s = MO_ACQUIRE;
		else if (s == MO_RELEASE)
			s = MO_ACQ_REL;
	} else if (f == MO_CONSUME) {
		if (s == MO_RELAXED)
			s = MO_CONSUME;
		else if (s == MO_RELEASE)
			s = MO_ACQ_REL;
	}
	*mo = s;
	*fmo = f;
}

#define RT_CAS(S, F) return __atomic_compare_exchange_n(a, c, v, false, S, F)

/* The operations of one size on integers of type T (1 to 8 bytes). */
#define RT_ATOMIC_OPS(n, T)                                                        \
	RT_EXPORT T __tsan_atomic##n##_load(const volatile T *a, int mo)           \
	{                                                                          \
		rt_access((uintptr_t)a, sizeof(T), false, RT_PC());                \
		switch (mo_norm(mo)) {                                             \
		case MO_RELAXED:                                                   \
			return __atomic_load_n(a, __ATOMIC_RELAXED);               \
		case MO_CONSUME:                                                   \
			return __atomic_load_n(a, __ATOMIC_CONSUME);               \
		case MO_ACQUIRE:                                                   \
		case MO_ACQ_REL: /* not a load order: acquire is its load part */  \
			return __atomic_load_n(a, __ATOMIC_ACQUIRE);               \
		default:                                                           \
			return __atomic_load_n(a, __ATOMIC_SEQ_CST);               \
		}                                                                  \
	}                                                                          \
	RT_EXPORT void __tsan_atomic##n##_store(volatile T *a, T v, int mo)        \
	{                                                                          \
		rt_access((uintptr_t)a, sizeof(T), true, RT_PC());                 \
		switch (mo_norm(mo)) {                                             \
		case MO_RELAXED:                                                   \
			__atomic_store_n(a, v, __ATOMIC_RELAXED);                  \
			break;                                                     \
		case MO_RELEASE:                                                   \
		case MO_ACQ_REL: /* not a store order: release is its store part */ \
			__atomic_store_n(a, v, __ATOMIC_RELEASE);                  \
			break;                                                     \
		default:                                                           \
			__atomic_store_n(a, v, __ATOMIC_SEQ_CST);                  \
			break;                                                     \
		}                                                                  \
	}                                                                          \
	RT_ATOMIC_RMW(n, T, exchange, __atomic_exchange_n)                         \
	RT_ATOMIC_RMW(n, T, fetch_add, __atomic_fetch_add)                         \
	RT_ATOMIC_RMW(n, T, fetch_sub, __atomic_fetch_sub)                         \
	RT_ATOMIC_RMW(n, T, fetch_and, __atomic_fetch_and)                         \
	RT_ATOMIC_RMW(n, T, fetch_or, __atomic_fetch_or)                           \
	RT_ATOMIC_RMW(n, T, fetch_xor, __atomic_fetch_xor)                         \
	RT_ATOMIC_RMW(n, T, fetch_nand, __atomic_fetch_nand)                       \
	static inline int cas##n(volatile T *a, T *c, T v, int mo, int fmo)        \
	{                                                                          \
		cas_orders(&mo, &fmo);                                             \
		switch (mo) {                                                      \
		case MO_RELAXED:                                                   \
			RT_CAS(__ATOMIC_RELAXED, __ATOMIC_RELAXED);                \
		case MO_CONSUME:                                                   \
			if (fmo == MO_RELAXED)                                     \
				RT_CAS(__ATOMIC_CONSUME, __ATOMIC_RELAXED);        \
			RT_CAS(__ATOMIC_CONSUME, __ATOMIC_CONSUME);                \
		case MO_ACQUIRE:                                                   \
			if (fmo == MO_RELAXED)                                     \
				RT_CAS(__ATOMIC_ACQUIRE, __ATOMIC_RELAXED);        \
			if (fmo == MO_CONSUME)                                     \
				RT_CAS(__ATOMIC_ACQUIRE, __ATOMIC_CONSUME);        \
			RT_CAS(__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE);                \
		case MO_RELEASE:                                                   \
			RT_CAS(__ATOMIC_RELEASE, __ATOMIC_RELAXED);                \
		case MO_ACQ_REL:                                                   \
			if (fmo == MO_RELAXED)                                     \
				RT_CAS(__ATOMIC_ACQ_REL, __ATOMIC_RELAXED);        \
			if (fmo == MO_CONSUME)                                     \
				RT_CAS(__ATOMIC_ACQ_REL, __ATOMIC_CONSUME);        \
			RT_CAS(__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);                \
		default:                                                           \
			if (fmo == MO_RELAXED)                                     \
				RT_CAS(__ATOMIC_SEQ_CST, __ATOMIC_RELAXED);        \
			if (fmo == MO_CONSUME)                                     \
				RT_CAS(__ATOMIC_SEQ_CST, __ATOMIC_CONSUME);        \
			if (fmo == MO_ACQUIRE)                                     \
				RT_CAS(__ATOMIC_SEQ_CST, __ATOMIC_ACQUIRE);        \
			RT_CAS(__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                \
		}                                                                  \
	}                                                                          \
	RT_EXPORT int __tsan_atomic##n##_compare_exchange_strong(                  \
		volatile T *a, T *c, T v, int mo, int fmo)                         \
	{                                                                          \
		rt_access((uintptr_t)a, sizeof(T), true, RT_PC());                 \
		return cas##n(a, c, v, mo, fmo);                                   \
	}                                                                          \
	/* A strong compare-exchange is a valid weak one (it just never      \
	 * fails spuriously). */                                                   \
	RT_EXPORT int __tsan_atomic##n##_compare_exchange_weak(                    \
		volatile T *a, T *c, T v, int mo, int fmo)                         \
	{                                                                          \
		rt_access((uintptr_t)a, sizeof(T), true, RT_PC());                 \
		return cas##n(a, c, v, mo, fmo);                                   \
	}                                                                          \
	RT_EXPORT T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, \
							    int mo, int fmo)       \
	{                                                                          \
		rt_access((uintptr_t)a, sizeof(T), true, RT_PC());                 \
		cas##n(a, &c, v, mo, fmo);                                         \
		return c;                                                          \
	}

#define RT_ATOMIC_RMW(n, T, op, builtin)                                           \
	RT_EXPORT T __tsan_atomic##n##_##op(volatile T *a, T v, int mo)            \
	{                                                                          \
		rt_access((uintptr_t)a, sizeof(T), true, RT_PC());                 \
		switch (mo_norm(mo)) {                                             \
		case MO_RELAXED:                                                   \
			return builtin(a, v, __ATOMIC_RELAXED);                    \
		case MO_CONSUME:                                                   \
			return builtin(a, v, __ATOMIC_CONSUME);                    \
		case MO_ACQUIRE:                                                   \
			return builtin(a, v, __ATOMIC_ACQUIRE);                    \
		case MO_RELEASE:                                                   \
			return builtin(a, v, __ATOMIC_RELEASE);                    \
		case MO_ACQ_REL:                                                   \
			return builtin(a, v, __ATOMIC_ACQ_REL);                    \
		default:                                                           \
			return builtin(a, v, __ATOMIC_SEQ_CST);                    \
		}                                                                  \
	}

RT_ATOMIC_OPS(8, rt_a8)
RT_ATOMIC_OPS(16, rt_a16)
RT_ATOMIC_OPS(32, rt_a32)
RT_ATOMIC_OPS(64, rt_a64)

/* ------------------------------------------------------------------ */
/* 16 bytes                                                            */
/* ------------------------------------------------------------------ */

#if defined(__x86_64__)
/* cmpxchg16b is a full barrier: every order is met. */
static inline rt_a128 cas128_val(volatile rt_a128 *a, rt_a128 c, rt_a128 v)
{
	return __sync_val_compare_and_swap(a, c, v);
}

static inline rt_a128 load128(const volatile rt_a128 *a, int mo)
{
	(void)mo;
	/* Swapping 0 for 0 reads the value atomically (and writes what was
	 * there when it was 0). */
	return __sync_val_compare_and_swap((volatile rt_a128 *)(uintptr_t)a, 0, 0);
}
#else
static inline rt_a128 cas128_val(volatile rt_a128 *a, rt_a128 c, rt_a128 v)
{
	__atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	return c;
}

static inline rt_a128 load128(const volatile rt_a128 *a, int mo)
{
	(void)mo;
	return __atomic_load_n(a, __ATOMIC_SEQ_CST);
}
#endif

/* old -> f(old, v), until no other thread got in between; the old
 * value. */
#define RT_RMW128(op, expr)                                                        \
	RT_EXPORT rt_a128 __tsan_atomic128_##op(volatile rt_a128 *a, rt_a128 v, int mo) \
	{                                                                          \
		rt_a128 old, seen;                                                 \
		(void)mo;                                                          \
		rt_access((uintptr_t)a, 16, true, RT_PC());                        \
		old = load128(a, MO_RELAXED);                                      \
		while ((seen = cas128_val(a, old, (expr))) != old)                 \
			old = seen;                                                \
		return old;                                                        \
	}

RT_EXPORT rt_a128 __tsan_atomic128_load(const volatile rt_a128 *a, int mo)
{
	rt_access((uintptr_t)a, 16, false, RT_PC());
	return load128(a, mo);
}

RT_EXPORT void __tsan_atomic128_store(volatile rt_a128 *a, rt_a128 v, int mo)
{
	rt_a128 old, seen;

	(void)mo;
	rt_access((uintptr_t)a, 16, true, RT_PC());
	old = load128(a, MO_RELAXED);
	while ((seen = cas128_val(a, old, v)) != old)
		old = seen;
}

RT_RMW128(exchange, v)
RT_RMW128(fetch_add, old + v)
RT_RMW128(fetch_sub, old - v)
RT_RMW128(fetch_and, old & v)
RT_RMW128(fetch_or, old | v)
RT_RMW128(fetch_xor, old ^ v)
RT_RMW128(fetch_nand, ~(old & v))

RT_EXPORT int __tsan_atomic128_compare_exchange_strong(volatile rt_a128 *a, rt_a128 *c,
						       rt_a128 v, int mo, int fmo)
{
	rt_a128 want = *c, seen;

	(void)mo;
	(void)fmo;
	rt_access((uintptr_t)a, 16, true, RT_PC());
	seen = cas128_val(a, want, v);
	*c = seen;
	return seen == want;
}

RT_EXPORT int __tsan_atomic128_compare_exchange_weak(volatile rt_a128 *a, rt_a128 *c,
						     rt_a128 v, int mo, int fmo)
{
	rt_a128 want = *c, seen;

	(void)mo;
	(void)fmo;
	rt_access((uintptr_t)a, 16, true, RT_PC());
	seen = cas128_val(a, want, v);
	*c = seen;
	return seen == want;
}

RT_EXPORT rt_a128 __tsan_atomic128_compare_exchange_val(volatile rt_a128 *a, rt_a128 c,
							rt_a128 v, int mo, int fmo)
{
	(void)mo;
	(void)fmo;
	rt_access((uintptr_t)a, 16, true, RT_PC());
	return cas128_val(a, c, v);
}

/* ------------------------------------------------------------------ */
/* Fences                                                              */
/* ------------------------------------------------------------------ */

RT_EXPORT void __tsan_atomic_thread_fence(int mo)
{
	switch (mo_norm(mo)) {
	case MO_RELAXED:
		break; /* no fence at all */
	case MO_CONSUME:
	case MO_ACQUIRE:
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		break;
	case MO_RELEASE:
		__atomic_thread_fence(__ATOMIC_RELEASE);
		break;
	case MO_ACQ_REL:
		__atomic_thread_fence(__ATOMIC_ACQ_REL);
		break;
	default:
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		break;
	}
}

RT_EXPORT void __tsan_atomic_signal_fence(int mo)
{
	switch (mo_norm(mo)) {
	case MO_RELAXED:
		break;
	case MO_CONSUME:
	case MO_ACQUIRE:
		__atomic_signal_fence(__ATOMIC_ACQUIRE);
		break;
	case MO_RELEASE:
		__atomic_signal_fence(__ATOMIC_RELEASE);
		break;
	case MO_ACQ_REL:
		__atomic_signal_fence(__ATOMIC_ACQ_REL);
		break;
	default:
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		break;
	}
}
