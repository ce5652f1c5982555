/*
 * Run directories of MPI ranks (mpirank.c).
 */
#ifndef KS_CLI_MPIRANK_H
#define KS_CLI_MPIRANK_H

#include "err.h"
#include "outdir.h"

/* This process's rank from the launcher's environment (Open MPI, PMIx,
 * PMI, Slurm), or -1 outside MPI. */
int ks_mpi_rank(void);
/* rank < 0: a run directory COMMAND_<time>_<pid> in output, as
 * ks_rundir_create makes; else output/COMMAND_<launcher's start>_<its
 * pid>/rank<rank>/, the shared directory made by the first rank there. */
int ks_mpi_rundir(const char *output, const char *command, int rank, struct ks_rundir *rd,
		  struct ks_err *err);

#endif
