/*
 * The GPU's clocks and driver version for kscope op's CUDA backend, from
 * NVML (libnvidia-ml.so.1, installed with the NVIDIA driver), loaded with
 * dlopen on first use so that the runtime loads without it.  The device
 * is found by its PCI bus id, which the CUDA driver and NVML agree on
 * (CUDA_VISIBLE_DEVICES renumbers CUDA's devices, not NVML's).
 *
 * Only the few entry points used are declared here, with NVML's
 * documented types: nvmlReturn_t is an int, nvmlDevice_t an opaque
 * pointer, NVML_CLOCK_SM 1 and NVML_CLOCK_MEM 2.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cuda_int.h"

typedef void *ks_nvml_device;

static struct {
	pthread_once_t once;
	bool ok;
	int (*init)(void);
	int (*by_bus)(const char *bus, ks_nvml_device *dev);
	int (*clock)(ks_nvml_device dev, int type, unsigned *mhz);
	int (*max_clock)(ks_nvml_device dev, int type, unsigned *mhz);
	int (*driver)(char *version, unsigned len);
} nvml = { .once = PTHREAD_ONCE_INIT };

static void nvml_load(void)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return;
	nvml.init = (int (*)(void))ks_cu_real_dlsym(h, "nvmlInit_v2");
	nvml.by_bus = (int (*)(const char *, ks_nvml_device *))ks_cu_real_dlsym(
		h, "nvmlDeviceGetHandleByPciBusId_v2");
	nvml.clock = (int (*)(ks_nvml_device, int, unsigned *))ks_cu_real_dlsym(
		h, "nvmlDeviceGetClockInfo");
	nvml.max_clock = (int (*)(ks_nvml_device, int, unsigned *))ks_cu_real_dlsym(
		h, "nvmlDeviceGetMaxClockInfo");
	nvml.driver = (int (*)(char *, unsigned))ks_cu_real_dlsym(h, "nvmlSystemGetDriverVersion");
	nvml.ok = nvml.init && nvml.by_bus && nvml.clock && nvml.init() == 0;
}

bool ks_cu_nvml_read(CUdevice d, struct ks_cu_clocks *c)
{
	char bus[64];
	ks_nvml_device dev = NULL;

	memset(c, 0, sizeof(*c));
	pthread_once(&nvml.once, nvml_load);
	if (!nvml.ok || !ks_cu_real.cuDeviceGetPCIBusId ||
	    ks_cu_real.cuDeviceGetPCIBusId(bus, (int)sizeof(bus), d) != CUDA_SUCCESS ||
	    nvml.by_bus(bus, &dev) != 0)
		return false;
	c->have_sm = nvml.clock(dev, 1, &c->sm_mhz) == 0;
	c->have_mem = nvml.clock(dev, 2, &c->mem_mhz) == 0;
	if (nvml.max_clock) {
		c->have_sm_max = nvml.max_clock(dev, 1, &c->sm_max_mhz) == 0;
		c->have_mem_max = nvml.max_clock(dev, 2, &c->mem_max_mhz) == 0;
	}
	if (nvml.driver && nvml.driver(c->driver, (unsigned)sizeof(c->driver)) != 0)
		c->driver[0] = '\0';
	return true;
}
