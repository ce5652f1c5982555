/*
 * Hardware counters for kscope op's CUDA backend, from CUPTI's range
 * profiler (CUDA 12.6 and later: cupti_range_profiler.h and
 * cupti_profiler_host.h): the DRAM bytes a replayed launch read and
 * wrote and its achieved occupancy, measured rather than inferred from
 * its arguments.
 *
 * CUPTI is loaded with dlopen, never linked: from where the program
 * already has it (PyTorch's wheels ship it), else by its soname, else
 * from the toolkit's usual places ($CUDA_HOME, /usr/local/cuda).  Without
 * it the counters are "not available", with the reason.
 *
 * One measurement: the range profiler is enabled on the current context
 * with one automatic range per kernel and kernel replay (CUPTI replays the
 * launch as many times as its passes need, saving and restoring the
 * memory it writes), the launch is made once, and the counter data is
 * decoded and evaluated.  The profiler is disabled again at once, so the
 * program's own launches run unprofiled.  The host object and the
 * configuration image are made once per process and chip.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

const char *ks_cu_hw_metrics[KS_CU_HW_NMETRICS] = {
	"dram__bytes_read.sum",
	"dram__bytes_write.sum",
	"sm__warps_active.avg.pct_of_peak_sustained_active",
	"gpu__time_duration.sum",
};

#ifndef KS_HAVE_CUPTI
int ks_cu_hw_measure(int (*launch)(void *), void *arg, struct ks_cu_hw *hw)
{
	(void)launch;
	(void)arg;
	memset(hw, 0, sizeof(*hw));
	snprintf(hw->why, sizeof(hw->why), "kscope was built without CUPTI's headers "
		 "(cupti_range_profiler.h, CUDA 12.6 or later)");
	return -1;
}
#else
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#define API(X) \
	X(cuptiGetResultString) X(cuptiProfilerInitialize) X(cuptiDeviceGetChipName) \
	X(cuptiProfilerGetCounterAvailability) X(cuptiProfilerHostInitialize) \
	X(cuptiProfilerHostDeinitialize) X(cuptiProfilerHostConfigAddMetrics) \
	X(cuptiProfilerHostGetConfigImageSize) X(cuptiProfilerHostGetConfigImage) \
	X(cuptiProfilerHostEvaluateToGpuValues) X(cuptiRangeProfilerEnable) \
	X(cuptiRangeProfilerDisable) X(cuptiRangeProfilerGetCounterDataSize) \
	X(cuptiRangeProfilerCounterDataImageInitialize) X(cuptiRangeProfilerSetConfig) \
	X(cuptiRangeProfilerStart) X(cuptiRangeProfilerStop) \
	X(cuptiRangeProfilerDecodeData) X(cuptiRangeProfilerGetCounterDataInfo)

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	bool loaded;
	char path[512];
	char why[300];                    /* !loaded */
#define PTR(f) __typeof__(f) *f;
	API(PTR)
#undef PTR
	/* Made on first use, under lock. */
	bool ready;
	char chip[64];
	CUpti_Profiler_Host_Object *host;
	uint8_t *avail;                   /* the host object keeps pointing at it */
	uint8_t *config;
	size_t config_size;
} cp = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

static void *try_open(const char *name)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (h)
		snprintf(cp.path, sizeof(cp.path), "%s", name);
	return h;
}

static void cupti_load(void)
{
	static const char *const names[] = {
		"libcupti.so.13", "libcupti.so.12", "libcupti.so",
		"/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
	};
	const char *home = getenv("CUDA_HOME");
	void *h = NULL;

	/* Already in the process (the program's own copy): that one. */
	h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		h = dlopen("libcupti.so.12", RTLD_NOW | RTLD_NOLOAD);
	if (h)
		snprintf(cp.path, sizeof(cp.path), "the program's libcupti");
	for (size_t i = 0; !h && i < sizeof(names) / sizeof(names[0]); i++)
		h = try_open(names[i]);
	if (!h && home && *home) {
		char p[400];

		snprintf(p, sizeof(p), "%s/lib64/libcupti.so", home);
		h = try_open(p);
		if (!h) {
			snprintf(p, sizeof(p), "%s/extras/CUPTI/lib64/libcupti.so", home);
			h = try_open(p);
		}
	}
	if (!h) {
		snprintf(cp.why, sizeof(cp.why), "CUPTI (libcupti.so) not found: it ships with the "
			 "CUDA toolkit (/usr/local/cuda/lib64) and PyTorch's wheels; set CUDA_HOME");
		return;
	}
#define SYM(f) cp.f = (__typeof__(cp.f))ks_cu_real_dlsym(h, #f);
	API(SYM)
#undef SYM
#define CHECK(f) && cp.f
	if (!(1 API(CHECK))) {
		snprintf(cp.why, sizeof(cp.why), "%.200s has no range profiler (CUPTI older than "
			 "CUDA 12.6)", cp.path);
		return;
	}
#undef CHECK
	cp.loaded = true;
}

static const char *res_name(CUptiResult r)
{
	const char *s = NULL;

	if (cp.cuptiGetResultString && cp.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s)
		return s;
	return "unknown CUPTI error";
}

#define FAIL(call, r) \
	(snprintf(hw->why, sizeof(hw->why), "%s returned %d (%s)", call, (int)(r), res_name(r)), \
	 -1)

/* Host object and configuration image for the device's chip, once. */
static int prepare(CUcontext ctx, CUdevice dev, struct ks_cu_hw *hw)
{
	CUpti_Profiler_Initialize_Params ip = { .structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE };
	CUpti_Device_GetChipName_Params cn = { .structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE };
	CUpti_Profiler_GetCounterAvailability_Params ca = { .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_Initialize_Params hi = { .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_ConfigAddMetrics_Params am = { .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImageSize_Params cs = { .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_GetConfigImage_Params ci = { .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE };
	uint8_t *avail;
	CUptiResult r;

	if (cp.ready)
		return 0;
	if (cp.host)                      /* a failure after the host object: final */
		return snprintf(hw->why, sizeof(hw->why), "%s", cp.why), -1;
	if ((r = cp.cuptiProfilerInitialize(&ip)) != CUPTI_SUCCESS)
		return FAIL("cuptiProfilerInitialize", r);
	cn.deviceIndex = (size_t)dev;
	if ((r = cp.cuptiDeviceGetChipName(&cn)) != CUPTI_SUCCESS || !cn.pChipName)
		return FAIL("cuptiDeviceGetChipName", r);
	snprintf(cp.chip, sizeof(cp.chip), "%s", cn.pChipName);
	ca.ctx = ctx;
	if ((r = cp.cuptiProfilerGetCounterAvailability(&ca)) != CUPTI_SUCCESS)
		return FAIL("cuptiProfilerGetCounterAvailability", r);
	free(cp.avail);
	if (!(cp.avail = avail = malloc(ca.counterAvailabilityImageSize ?
					    ca.counterAvailabilityImageSize : 1)))
		return snprintf(hw->why, sizeof(hw->why), "out of memory"), -1;
	ca.pCounterAvailabilityImage = avail;
	if ((r = cp.cuptiProfilerGetCounterAvailability(&ca)) != CUPTI_SUCCESS)
		return FAIL("cuptiProfilerGetCounterAvailability", r);
	hi.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
	hi.pChipName = cp.chip;
	hi.pCounterAvailabilityImage = avail;
	if ((r = cp.cuptiProfilerHostInitialize(&hi)) != CUPTI_SUCCESS)
		return FAIL("cuptiProfilerHostInitialize", r);
	cp.host = hi.pHostObject;
	am.pHostObject = cp.host;
	am.ppMetricNames = ks_cu_hw_metrics;
	am.numMetrics = KS_CU_HW_NMETRICS;
	if ((r = cp.cuptiProfilerHostConfigAddMetrics(&am)) != CUPTI_SUCCESS)
		return FAIL("cuptiProfilerHostConfigAddMetrics", r);
	cs.pHostObject = cp.host;
	if ((r = cp.cuptiProfilerHostGetConfigImageSize(&cs)) != CUPTI_SUCCESS)
		return FAIL("cuptiProfilerHostGetConfigImageSize", r);
	if (!(cp.config = malloc(cs.configImageSize ? cs.configImageSize : 1)))
		return snprintf(hw->why, sizeof(hw->why), "out of memory"), -1;
	ci.pHostObject = cp.host;
	ci.configImageSize = cs.configImageSize;
	ci.pConfigImage = cp.config;
	if ((r = cp.cuptiProfilerHostGetConfigImage(&ci)) != CUPTI_SUCCESS) {
		free(cp.config);
		cp.config = NULL;
		return FAIL("cuptiProfilerHostGetConfigImage", r);
	}
	cp.config_size = cs.configImageSize;
	cp.ready = true;
	return 0;
}

/* One profiled launch on the enabled object. */
static int profile(CUpti_RangeProfiler_Object *obj, int (*launch)(void *), void *arg,
		   struct ks_cu_hw *hw)
{
	CUpti_RangeProfiler_GetCounterDataSize_Params gs = { .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_CounterDataImage_Initialize_Params ii = { .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_SetConfig_Params sc = { .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Start_Params st = { .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Stop_Params sp = { .structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_DecodeData_Params dd = { .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_GetCounterDataInfo_Params gi = { .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE };
	CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = { .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE };
	uint8_t *data = NULL;
	CUptiResult r;
	int rc = -1;

	gs.pRangeProfilerObject = obj;
	gs.pMetricNames = ks_cu_hw_metrics;
	gs.numMetrics = KS_CU_HW_NMETRICS;
	gs.maxNumOfRanges = 1;
	gs.maxNumRangeTreeNodes = 1;
	if ((r = cp.cuptiRangeProfilerGetCounterDataSize(&gs)) != CUPTI_SUCCESS)
		return FAIL("cuptiRangeProfilerGetCounterDataSize", r);
	if (!(data = malloc(gs.counterDataSize ? gs.counterDataSize : 1)))
		return snprintf(hw->why, sizeof(hw->why), "out of memory"), -1;
	ii.pRangeProfilerObject = obj;
	ii.counterDataSize = gs.counterDataSize;
	ii.pCounterData = data;
	if ((r = cp.cuptiRangeProfilerCounterDataImageInitialize(&ii)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerCounterDataImageInitialize", r);
		goto out;
	}
	sc.pRangeProfilerObject = obj;
	sc.configSize = cp.config_size;
	sc.pConfig = cp.config;
	sc.counterDataImageSize = gs.counterDataSize;
	sc.pCounterDataImage = data;
	sc.range = CUPTI_AutoRange;
	sc.replayMode = CUPTI_KernelReplay;
	sc.maxRangesPerPass = 1;
	sc.numNestingLevels = 1;
	sc.minNestingLevel = 1;
	sc.passIndex = 0;
	sc.targetNestingLevel = 1;
	if ((r = cp.cuptiRangeProfilerSetConfig(&sc)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerSetConfig", r);
		goto out;
	}
	st.pRangeProfilerObject = obj;
	if ((r = cp.cuptiRangeProfilerStart(&st)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerStart", r);
		goto out;
	}
	if (launch(arg) != 0) {
		snprintf(hw->why, sizeof(hw->why), "the launch under CUPTI failed");
		sp.pRangeProfilerObject = obj;
		cp.cuptiRangeProfilerStop(&sp);
		goto out;
	}
	sp.pRangeProfilerObject = obj;
	if ((r = cp.cuptiRangeProfilerStop(&sp)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerStop", r);
		goto out;
	}
	if (!sp.isAllPassSubmitted) {
		snprintf(hw->why, sizeof(hw->why), "CUPTI needed more passes than kernel replay gave");
		goto out;
	}
	dd.pRangeProfilerObject = obj;
	if ((r = cp.cuptiRangeProfilerDecodeData(&dd)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerDecodeData", r);
		goto out;
	}
	gi.pCounterDataImage = data;
	gi.counterDataImageSize = gs.counterDataSize;
	if ((r = cp.cuptiRangeProfilerGetCounterDataInfo(&gi)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerGetCounterDataInfo", r);
		goto out;
	}
	if (gi.numTotalRanges < 1) {
		snprintf(hw->why, sizeof(hw->why), "CUPTI recorded no range for the launch");
		goto out;
	}
	ev.pHostObject = cp.host;
	ev.pCounterDataImage = data;
	ev.counterDataImageSize = gs.counterDataSize;
	ev.rangeIndex = 0;
	ev.ppMetricNames = ks_cu_hw_metrics;
	ev.numMetrics = KS_CU_HW_NMETRICS;
	ev.pMetricValues = hw->value;
	if ((r = cp.cuptiProfilerHostEvaluateToGpuValues(&ev)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiProfilerHostEvaluateToGpuValues", r);
		goto out;
	}
	rc = 0;
out:
	free(data);
	return rc;
}

int ks_cu_hw_measure(int (*launch)(void *), void *arg, struct ks_cu_hw *hw)
{
	CUpti_RangeProfiler_Enable_Params en = { .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE };
	CUpti_RangeProfiler_Disable_Params di = { .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE };
	CUcontext ctx = NULL;
	CUdevice dev;
	CUptiResult r;
	int rc;

	memset(hw, 0, sizeof(*hw));
	pthread_once(&cp.once, cupti_load);
	if (!cp.loaded) {
		snprintf(hw->why, sizeof(hw->why), "%s", cp.why);
		return -1;
	}
	if (!ks_cu_real.cuCtxGetCurrent || ks_cu_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS ||
	    !ctx || ks_cu_real.cuCtxGetDevice(&dev) != CUDA_SUCCESS) {
		snprintf(hw->why, sizeof(hw->why), "no current CUDA context");
		return -1;
	}
	pthread_mutex_lock(&cp.lock);
	if ((rc = prepare(ctx, dev, hw)) != 0) {
		if (cp.host)              /* the same failure each time: keep it */
			snprintf(cp.why, sizeof(cp.why), "%.290s", hw->why);
		goto out;
	}
	en.ctx = ctx;
	if ((r = cp.cuptiRangeProfilerEnable(&en)) != CUPTI_SUCCESS) {
		rc = FAIL("cuptiRangeProfilerEnable", r);
		goto out;
	}
	rc = profile(en.pRangeProfilerObject, launch, arg, hw);
	di.pRangeProfilerObject = en.pRangeProfilerObject;
	if ((r = cp.cuptiRangeProfilerDisable(&di)) != CUPTI_SUCCESS && rc == 0)
		rc = FAIL("cuptiRangeProfilerDisable", r);
	if (rc == 0) {
		hw->have = true;
		snprintf(hw->source, sizeof(hw->source), "CUPTI range profiler (%.400s, chip %.60s)",
			 cp.path, cp.chip);
	}
out:
	pthread_mutex_unlock(&cp.lock);
	return rc;
}
#endif
