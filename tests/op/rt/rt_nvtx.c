/*
 * The NVTX calls of tests/op/rt/test_nvtx.py: every kind of NVTX range
 * that libkscope-op.so maps to a user range (src/op/rt/oprt_nvtx.c), in
 * a fixed order, printing what each call returns.  No OpenCL: under
 * range replay each range is announced to kscope as it starts, which is
 * what the test reads.
 *
 * Ranges in start order (their names as kscope must see them):
 *   0 a0, 1 a1, 2 "wide é" (push, nested three deep, then popped)
 *   3 s0, 4 s1 (start/end, ended out of order)
 *   5 ex_ascii, 6 ex_wide, 7 reg, 8 (unnamed) (unknown message type),
 *   9 (unnamed) (attributes too small), 10 (unnamed) (NULL message)
 *   11 d_a (pushed in domain "d"), 12 g (pushed in the global domain
 *   meanwhile): each domain pops its own
 *   13 t_open: pushed by a thread that exits without popping it
 *   14 last: start/end
 *
 * Without a tool NVTX returns -2 (no push/pop tracking) from push and pop
 * and 0 from start; under kscope push returns the level and pop the level
 * of the range it ended (-1: none).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

static void *thread_main(void *arg)
{
	(void)arg;
	printf("thread push t_open: %d\n", nvtxRangePushA("t_open"));
	return NULL;                      /* t_open is never popped */
}

static nvtxEventAttributes_t attr(int type)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = type;
	return a;
}

int main(void)
{
	nvtxEventAttributes_t a;
	nvtxDomainHandle_t d, d2;
	nvtxRangeId_t s0, s1;
	pthread_t th;

	printf("push a0: %d\n", nvtxRangePushA("a0"));
	printf("push a1: %d\n", nvtxRangePushA("a1"));
	printf("push wide: %d\n", nvtxRangePushW(L"wide \u00e9"));
	printf("pop: %d\n", nvtxRangePop());
	printf("pop: %d\n", nvtxRangePop());
	printf("pop: %d\n", nvtxRangePop());
	printf("pop empty: %d\n", nvtxRangePop());

	s0 = nvtxRangeStartA("s0");
	s1 = nvtxRangeStartA("s1");
	printf("start ids: %s\n", s0 == 0 && s1 == 0 ? "0 0" : s0 && s1 && s0 != s1 ? "distinct" :
	       "WRONG");
	nvtxRangeEnd(s0);
	nvtxRangeEnd(s1);

	a = attr(NVTX_MESSAGE_TYPE_ASCII);
	a.message.ascii = "ex_ascii";
	printf("push ex_ascii: %d\n", nvtxRangePushEx(&a));
	a = attr(NVTX_MESSAGE_TYPE_UNICODE);
	a.message.unicode = L"ex_wide";
	printf("push ex_wide: %d\n", nvtxRangePushEx(&a));
	d = nvtxDomainCreateA("d");
	d2 = nvtxDomainCreateA("d");
	printf("domain handles: %s\n", d == d2 ? "same" : "different");
	a = attr(NVTX_MESSAGE_TYPE_REGISTERED);
	a.message.registered = nvtxDomainRegisterStringA(d, "reg");
	printf("registered handles: %s\n",
	       a.message.registered == nvtxDomainRegisterStringA(NULL, "reg") ? "same" :
	       "different");
	nvtxRangeEnd(nvtxRangeStartEx(&a));
	a = attr(42);
	a.message.ascii = "not a message type";
	nvtxRangeEnd(nvtxRangeStartEx(&a));
	a = attr(NVTX_MESSAGE_TYPE_ASCII);
	a.message.ascii = "too small";
	a.size = 16;
	nvtxRangeEnd(nvtxRangeStartEx(&a));
	a = attr(NVTX_MESSAGE_TYPE_ASCII);
	nvtxRangeEnd(nvtxRangeStartEx(&a));
	printf("pop: %d\n", nvtxRangePop());
	printf("pop: %d\n", nvtxRangePop());

	a = attr(NVTX_MESSAGE_TYPE_ASCII);
	a.message.ascii = "d_a";
	printf("domain push d_a: %d\n", nvtxDomainRangePushEx(d, &a));
	printf("push g: %d\n", nvtxRangePushA("g"));
	printf("domain pop: %d\n", nvtxDomainRangePop(d));
	printf("domain pop empty: %d\n", nvtxDomainRangePop(d));
	printf("pop: %d\n", nvtxRangePop());

	fflush(stdout);
	if (pthread_create(&th, NULL, thread_main, NULL) != 0 || pthread_join(th, NULL) != 0) {
		fprintf(stderr, "rt_nvtx: cannot run a thread\n");
		return 1;
	}
	nvtxRangeEnd(nvtxRangeStartA("last"));
	printf("rt_nvtx: done\n");
	return 0;
}
