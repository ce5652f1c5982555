/*
 * MPI wrappers: each wrapped call is recorded as a KS_RAW_MPI record of the
 * calling thread (begin and end time, bytes, partner rank, communicator
 * size), and MPI_Init/MPI_Init_thread learn the process's rank for the
 * file header.
 *
 * libkscope.so must load into programs without MPI, so it does not link
 * libmpi and does not include <mpi.h>: the real functions are found with
 * dlsym(RTLD_NEXT, "PMPI_...") (falling back to "MPI_...") on first use,
 * and the MPI handle types are declared here as opaque pointer-sized
 * values.  That matches Open MPI, whose handles are pointers, and on
 * x86-64 also MPICH, whose int handles travel in the low half of the same
 * registers and stack slots; the wrappers only pass handles through and
 * ask the real library about them (PMPI_Type_size, PMPI_Comm_size).
 * MPI_COMM_WORLD is Open MPI's ompi_mpi_comm_world (from dlsym), else
 * MPICH's constant.
 *
 * Bytes are count times the datatype's size: for point-to-point calls the
 * message, for MPI_Sendrecv both messages, for collectives this rank's
 * contribution (MPI_Alltoall: to every rank).  The partner is the
 * destination or source argument as given (so MPI_ANY_SOURCE stays as the
 * library's value), and -1 for collectives and waits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "rt_int.h"

typedef void *ks_mpi_handle;       /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request */
typedef struct ks_mpi_status ks_mpi_status; /* MPI_Status: only passed on */

#define KS_MPICH_COMM_WORLD ((ks_mpi_handle)(intptr_t)0x44000000)

/* The wrapped functions, as the program calls them. */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Finalize(void);
int MPI_Send(const void *buf, int count, ks_mpi_handle dt, int dest, int tag,
	     ks_mpi_handle comm);
int MPI_Recv(void *buf, int count, ks_mpi_handle dt, int source, int tag,
	     ks_mpi_handle comm, ks_mpi_status *status);
int MPI_Isend(const void *buf, int count, ks_mpi_handle dt, int dest, int tag,
	      ks_mpi_handle comm, ks_mpi_handle *req);
int MPI_Irecv(void *buf, int count, ks_mpi_handle dt, int source, int tag,
	      ks_mpi_handle comm, ks_mpi_handle *req);
int MPI_Wait(ks_mpi_handle *req, ks_mpi_status *status);
int MPI_Waitall(int count, ks_mpi_handle reqs[], ks_mpi_status *statuses);
int MPI_Sendrecv(const void *sbuf, int scount, ks_mpi_handle sdt, int dest, int stag,
		 void *rbuf, int rcount, ks_mpi_handle rdt, int source, int rtag,
		 ks_mpi_handle comm, ks_mpi_status *status);
int MPI_Barrier(ks_mpi_handle comm);
int MPI_Bcast(void *buf, int count, ks_mpi_handle dt, int root, ks_mpi_handle comm);
int MPI_Reduce(const void *sbuf, void *rbuf, int count, ks_mpi_handle dt,
	       ks_mpi_handle op, int root, ks_mpi_handle comm);
int MPI_Allreduce(const void *sbuf, void *rbuf, int count, ks_mpi_handle dt,
		  ks_mpi_handle op, ks_mpi_handle comm);
int MPI_Gather(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf, int rcount,
	       ks_mpi_handle rdt, int root, ks_mpi_handle comm);
int MPI_Allgather(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf,
		  int rcount, ks_mpi_handle rdt, ks_mpi_handle comm);
int MPI_Scatter(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf, int rcount,
		ks_mpi_handle rdt, int root, ks_mpi_handle comm);
int MPI_Alltoall(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf,
		 int rcount, ks_mpi_handle rdt, ks_mpi_handle comm);

/* The real MPI entry points, resolved on first use.  Part of the preload
 * library's state (see struct ks_rt): there is no caller to hold them. */
static struct {
	int (*init)(int *, char ***);
	int (*init_thread)(int *, char ***, int, int *);
	int (*finalize)(void);
	int (*send)(const void *, int, ks_mpi_handle, int, int, ks_mpi_handle);
	int (*recv)(void *, int, ks_mpi_handle, int, int, ks_mpi_handle, ks_mpi_status *);
	int (*isend)(const void *, int, ks_mpi_handle, int, int, ks_mpi_handle, ks_mpi_handle *);
	int (*irecv)(void *, int, ks_mpi_handle, int, int, ks_mpi_handle, ks_mpi_handle *);
	int (*wait)(ks_mpi_handle *, ks_mpi_status *);
	int (*waitall)(int, ks_mpi_handle[], ks_mpi_status *);
	int (*sendrecv)(const void *, int, ks_mpi_handle, int, int, void *, int, ks_mpi_handle,
			int, int, ks_mpi_handle, ks_mpi_status *);
	int (*barrier)(ks_mpi_handle);
	int (*bcast)(void *, int, ks_mpi_handle, int, ks_mpi_handle);
	int (*reduce)(const void *, void *, int, ks_mpi_handle, ks_mpi_handle, int, ks_mpi_handle);
	int (*allreduce)(const void *, void *, int, ks_mpi_handle, ks_mpi_handle, ks_mpi_handle);
	int (*gather)(const void *, int, ks_mpi_handle, void *, int, ks_mpi_handle, int,
		      ks_mpi_handle);
	int (*allgather)(const void *, int, ks_mpi_handle, void *, int, ks_mpi_handle,
			 ks_mpi_handle);
	int (*scatter)(const void *, int, ks_mpi_handle, void *, int, ks_mpi_handle, int,
		       ks_mpi_handle);
	int (*alltoall)(const void *, int, ks_mpi_handle, void *, int, ks_mpi_handle,
			ks_mpi_handle);
	int (*type_size)(ks_mpi_handle, int *);
	int (*comm_size)(ks_mpi_handle, int *);
	int (*comm_rank)(ks_mpi_handle, int *);
	int world_size;
} mpi;

/* Open MPI's error code for "other error", returned if the real function
 * cannot be found (the program could not have linked then). */
#define KS_MPI_ERR_OTHER 16

static void *mpi_sym(const char *name)
{
	char pname[64] = "P";
	void *p;

	strncat(pname, name, sizeof(pname) - 2);
	p = dlsym(RTLD_NEXT, pname);
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	if (!p)
		p = dlsym(RTLD_DEFAULT, pname);
	return p;
}

#define MPI_REAL(field, name) \
	(mpi.field ? mpi.field : (mpi.field = (__typeof__(mpi.field))mpi_sym(name)))

static uint64_t type_bytes(int count, ks_mpi_handle dt)
{
	int size = 0;

	if (count <= 0 || !MPI_REAL(type_size, "MPI_Type_size") || mpi.type_size(dt, &size) != 0 ||
	    size < 0)
		return 0;
	return (uint64_t)count * (uint64_t)size;
}

static int comm_size(ks_mpi_handle comm)
{
	int n = 0;

	if (!MPI_REAL(comm_size, "MPI_Comm_size") || mpi.comm_size(comm, &n) != 0)
		return 0;
	return n;
}

/* MPI_IN_PLACE: (void *)1 in Open MPI, (void *)-1 in MPICH. */
static bool in_place(const void *buf)
{
	return buf == (const void *)1 || buf == (const void *)-1;
}

static void mpi_record(const char *name, uint64_t t0, uint64_t bytes, int peer, int csize)
{
	struct ks_raw_mpi r;
	uint64_t t1 = ks_rt_now();

	/* With time windows, a call that began or ended inside one. */
	if (ks_rt_windowed() && !ks_rt_window_open(t0) && !ks_rt_window_open(t1))
		return;
	memset(&r, 0, sizeof(r));
	r.h.type = KS_RAW_MPI;
	r.h.size = sizeof(r);
	r.ts_begin = t0;
	r.ts_end = t1;
	r.bytes = bytes;
	r.peer = peer;
	r.comm_size = csize;
	strncpy(r.name, name, sizeof(r.name) - 1);
	ks_rt_record(&r, sizeof(r));
}

/* Every wrapper: call the real function, then record if the runtime is
 * on, keeping the errno the call left. */
#define MPI_WRAP(field, name, call, bytes, peer, comm)                         \
	do {                                                                   \
		uint64_t t0_ = ks_rt_now();                                    \
		int rc_, e_;                                                   \
		if (!MPI_REAL(field, name))                                    \
			return KS_MPI_ERR_OTHER;                               \
		rc_ = mpi.field call;                                          \
		e_ = errno;                                                    \
		if (ks_rt_on())                                                \
			mpi_record(name, t0_, (bytes), (peer), comm_size(comm)); \
		errno = e_;                                                    \
		return rc_;                                                    \
	} while (0)

static void learn_rank(void)
{
	ks_mpi_handle world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
	int rank = -1;

	if (!world)
		world = KS_MPICH_COMM_WORLD;
	if (MPI_REAL(comm_rank, "MPI_Comm_rank") && mpi.comm_rank(world, &rank) == 0 && rank >= 0) {
		atomic_store(&ks_rt.rank, rank);
		ks_rt.hdr.rank = rank;
		ks_rt_header_update();
	}
	mpi.world_size = comm_size(world);
}

KS_RT_EXPORT int MPI_Init(int *argc, char ***argv)
{
	uint64_t t0 = ks_rt_now();
	int rc, e;

	if (!MPI_REAL(init, "MPI_Init"))
		return KS_MPI_ERR_OTHER;
	rc = mpi.init(argc, argv);
	e = errno;
	if (rc == 0 && ks_rt_on()) {
		learn_rank();
		mpi_record("MPI_Init", t0, 0, -1, mpi.world_size);
	}
	errno = e;
	return rc;
}

KS_RT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	uint64_t t0 = ks_rt_now();
	int rc, e;

	if (!MPI_REAL(init_thread, "MPI_Init_thread"))
		return KS_MPI_ERR_OTHER;
	rc = mpi.init_thread(argc, argv, required, provided);
	e = errno;
	if (rc == 0 && ks_rt_on()) {
		learn_rank();
		mpi_record("MPI_Init_thread", t0, 0, -1, mpi.world_size);
	}
	errno = e;
	return rc;
}

KS_RT_EXPORT int MPI_Finalize(void)
{
	uint64_t t0 = ks_rt_now();
	int rc, e;

	if (!MPI_REAL(finalize, "MPI_Finalize"))
		return KS_MPI_ERR_OTHER;
	rc = mpi.finalize();
	e = errno;
	if (ks_rt_on())
		mpi_record("MPI_Finalize", t0, 0, -1, mpi.world_size);
	errno = e;
	return rc;
}

KS_RT_EXPORT int MPI_Send(const void *buf, int count, ks_mpi_handle dt, int dest, int tag,
			  ks_mpi_handle comm)
{
	MPI_WRAP(send, "MPI_Send", (buf, count, dt, dest, tag, comm),
		 type_bytes(count, dt), dest, comm);
}

KS_RT_EXPORT int MPI_Recv(void *buf, int count, ks_mpi_handle dt, int source, int tag,
			  ks_mpi_handle comm, ks_mpi_status *status)
{
	MPI_WRAP(recv, "MPI_Recv", (buf, count, dt, source, tag, comm, status),
		 type_bytes(count, dt), source, comm);
}

KS_RT_EXPORT int MPI_Isend(const void *buf, int count, ks_mpi_handle dt, int dest, int tag,
			   ks_mpi_handle comm, ks_mpi_handle *req)
{
	MPI_WRAP(isend, "MPI_Isend", (buf, count, dt, dest, tag, comm, req),
		 type_bytes(count, dt), dest, comm);
}

KS_RT_EXPORT int MPI_Irecv(void *buf, int count, ks_mpi_handle dt, int source, int tag,
			   ks_mpi_handle comm, ks_mpi_handle *req)
{
	MPI_WRAP(irecv, "MPI_Irecv", (buf, count, dt, source, tag, comm, req),
		 type_bytes(count, dt), source, comm);
}

/* The waits have no communicator to ask: comm_size 0. */
KS_RT_EXPORT int MPI_Wait(ks_mpi_handle *req, ks_mpi_status *status)
{
	uint64_t t0 = ks_rt_now();
	int rc, e;

	if (!MPI_REAL(wait, "MPI_Wait"))
		return KS_MPI_ERR_OTHER;
	rc = mpi.wait(req, status);
	e = errno;
	if (ks_rt_on())
		mpi_record("MPI_Wait", t0, 0, -1, 0);
	errno = e;
	return rc;
}

KS_RT_EXPORT int MPI_Waitall(int count, ks_mpi_handle reqs[], ks_mpi_status *statuses)
{
	uint64_t t0 = ks_rt_now();
	int rc, e;

	if (!MPI_REAL(waitall, "MPI_Waitall"))
		return KS_MPI_ERR_OTHER;
	rc = mpi.waitall(count, reqs, statuses);
	e = errno;
	if (ks_rt_on())
		mpi_record("MPI_Waitall", t0, 0, -1, 0);
	errno = e;
	return rc;
}

KS_RT_EXPORT int MPI_Sendrecv(const void *sbuf, int scount, ks_mpi_handle sdt, int dest,
			      int stag, void *rbuf, int rcount, ks_mpi_handle rdt, int source,
			      int rtag, ks_mpi_handle comm, ks_mpi_status *status)
{
	MPI_WRAP(sendrecv, "MPI_Sendrecv",
		 (sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, status),
		 type_bytes(scount, sdt) + type_bytes(rcount, rdt), dest, comm);
}

KS_RT_EXPORT int MPI_Barrier(ks_mpi_handle comm)
{
	MPI_WRAP(barrier, "MPI_Barrier", (comm), 0, -1, comm);
}

KS_RT_EXPORT int MPI_Bcast(void *buf, int count, ks_mpi_handle dt, int root, ks_mpi_handle comm)
{
	MPI_WRAP(bcast, "MPI_Bcast", (buf, count, dt, root, comm), type_bytes(count, dt), -1, comm);
}

KS_RT_EXPORT int MPI_Reduce(const void *sbuf, void *rbuf, int count, ks_mpi_handle dt,
			    ks_mpi_handle op, int root, ks_mpi_handle comm)
{
	MPI_WRAP(reduce, "MPI_Reduce", (sbuf, rbuf, count, dt, op, root, comm),
		 type_bytes(count, dt), -1, comm);
}

KS_RT_EXPORT int MPI_Allreduce(const void *sbuf, void *rbuf, int count, ks_mpi_handle dt,
			       ks_mpi_handle op, ks_mpi_handle comm)
{
	MPI_WRAP(allreduce, "MPI_Allreduce", (sbuf, rbuf, count, dt, op, comm),
		 type_bytes(count, dt), -1, comm);
}

KS_RT_EXPORT int MPI_Gather(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf,
			    int rcount, ks_mpi_handle rdt, int root, ks_mpi_handle comm)
{
	MPI_WRAP(gather, "MPI_Gather", (sbuf, scount, sdt, rbuf, rcount, rdt, root, comm),
		 in_place(sbuf) ? type_bytes(rcount, rdt) : type_bytes(scount, sdt), -1, comm);
}

KS_RT_EXPORT int MPI_Allgather(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf,
			       int rcount, ks_mpi_handle rdt, ks_mpi_handle comm)
{
	MPI_WRAP(allgather, "MPI_Allgather", (sbuf, scount, sdt, rbuf, rcount, rdt, comm),
		 in_place(sbuf) ? type_bytes(rcount, rdt) : type_bytes(scount, sdt), -1, comm);
}

KS_RT_EXPORT int MPI_Scatter(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf,
			     int rcount, ks_mpi_handle rdt, int root, ks_mpi_handle comm)
{
	MPI_WRAP(scatter, "MPI_Scatter", (sbuf, scount, sdt, rbuf, rcount, rdt, root, comm),
		 in_place(rbuf) ? type_bytes(scount, sdt) : type_bytes(rcount, rdt), -1, comm);
}

KS_RT_EXPORT int MPI_Alltoall(const void *sbuf, int scount, ks_mpi_handle sdt, void *rbuf,
			      int rcount, ks_mpi_handle rdt, ks_mpi_handle comm)
{
	MPI_WRAP(alltoall, "MPI_Alltoall", (sbuf, scount, sdt, rbuf, rcount, rdt, comm),
		 (in_place(sbuf) ? type_bytes(rcount, rdt) : type_bytes(scount, sdt)) *
			 (uint64_t)comm_size(comm),
		 -1, comm);
}
