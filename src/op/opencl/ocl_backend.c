/*
 * kscope op's OpenCL backend as the runtime-neutral part sees it: its
 * table of operations (struct ks_oprt_backend, oprt.h).  The operations
 * themselves are in ocl_replay.c; the wrapped entry points in ocl_wrap.c
 * call the neutral part directly.
 */
#include "ocl_int.h"

/* Nothing to start: the runtime's entry points are found on the program's
 * first OpenCL call (the program may load OpenCL later, or never). */
static int ocl_init(struct ks_err *err)
{
	(void)err;
	return 0;
}

/* At exit: the records' memory.  The runtime is not called (it may already
 * have been torn down by its own destructors). */
static void ocl_fini(void)
{
	ks_ocl_records_clear();
}

/* Around fork() (oprt_main.c): the records' lock, taken without waiting
 * in the parent; given back there, made new in the child. */
static bool ocl_fork_prepare(void)
{
	return pthread_mutex_trylock(&ks_ocl_lock) == 0;
}

static void ocl_fork_release(bool child)
{
	if (child)
		pthread_mutex_init(&ks_ocl_lock, NULL);
	else
		pthread_mutex_unlock(&ks_ocl_lock);
}

static const char *ocl_status_name(int status)
{
	return ks_ocl_error_name((cl_int)status);
}

const struct ks_oprt_backend ks_oprt_opencl_backend = {
	.name = "opencl",
	.init = ocl_init,
	.fini = ocl_fini,
	.fork_prepare = ocl_fork_prepare,
	.fork_release = ocl_fork_release,
	.quiesce = ks_ocl_quiesce,
	.flush = ks_ocl_flush,
	.launch_original = ks_ocl_launch_original,
	.status_name = ocl_status_name,
	.rep_new = ks_ocl_rep_new,
	.rep_add = ks_ocl_rep_add,
	.rep_backup = ks_ocl_rep_backup,
	.rep_restore = ks_ocl_rep_restore,
	.rep_flush = ks_ocl_rep_flush,
	.rep_run = ks_ocl_rep_run,
	.rep_diff = ks_ocl_rep_diff,
	.rep_bufs = ks_ocl_rep_bufs,
	.rep_describe = ks_ocl_rep_describe,
	.rep_program = ks_ocl_rep_program,
	.rep_free = ks_ocl_rep_free,
};
