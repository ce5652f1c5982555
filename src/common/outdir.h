/*
 * Safe output: run directories and deliverable files.
 *
 * Every kscope run writes into a new directory
 * <output>/<command>_<YYYYmmdd_HHMMSS>_<pid>/ (mode 0750), created
 * exclusively, so no run ever writes into another's.  Files are written
 * under a hidden temporary name (".NAME.part", mode 0640) and get their
 * final name only after every byte reached the disk: a failed or
 * interrupted write never leaves a file that looks complete.  Finished
 * deliverables are made read-only (0440).
 */
#ifndef KS_OUTDIR_H
#define KS_OUTDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define KS_DIR_MODE         0750
#define KS_FILE_MODE        0640
#define KS_DELIVERABLE_MODE 0440

struct ks_rundir {
	char *path;  /* absolute path of the run directory; owned */
	int dirfd;   /* open on it (O_DIRECTORY|O_NOFOLLOW); -1 while pending */
	/* Reserved (ks_rundir_reserve) but not made yet: the output
	 * directory, open, and the name to create in it. */
	bool pending;
	int outfd;
	char name[160];
};

/* Creates output (and missing parents, 0750) if needed, then a new run
 * directory in it for command.  output must have passed
 * ks_check_output; the ownership and mode rules are checked again here on
 * the opened directory so a change in between is caught.  time_override
 * (0: now) lets tests fix the timestamp. */
int ks_rundir_create(const char *output, const char *command,
		     time_t time_override, struct ks_rundir *rd,
		     struct ks_err *err);
/* For runs that may produce nothing: checks output and picks the run
 * directory's name (rd->path is set) without creating it;
 * ks_rundir_make creates it when the first result is due.  A run that
 * never makes it leaves nothing behind, and pays no directory creation
 * and removal (which, on a file system mounted with `discard`, waits for
 * the device).  ks_rundir_make fails if another process created the name
 * in between.  Both leave rd valid for ks_rundir_close/discard. */
int ks_rundir_reserve(const char *output, const char *command, struct ks_rundir *rd,
		      struct ks_err *err);
int ks_rundir_make(struct ks_rundir *rd, struct ks_err *err);
void ks_rundir_close(struct ks_rundir *rd);
/* For runs made of several cooperating processes (MPI ranks): opens, or
 * creates, <output>/<name> (0750, owned by the user, checked like a run
 * directory's parent) and creates <output>/<name>/<sub> exclusively as
 * this process's run directory. */
int ks_rundir_create_shared(const char *output, const char *name,
			    const char *sub, struct ks_rundir *rd,
			    struct ks_err *err);
/* After a failed run: removes the run directory if nothing was left in it
 * (a failed run leaves no empty directory that looks like a result), then
 * closes it.  A directory with files in it is kept for inspection. */
void ks_rundir_discard(struct ks_rundir *rd);

struct ks_outfile {
	int fd;            /* write end, or -1 once finished */
	int dirfd;         /* the run directory's (not owned) */
	char name[256];    /* final name */
	char tmpname[264]; /* ".NAME.part" while being written */
	int error;         /* first write error (negative errno), 0 if none */
};

/* Opens NAME in the run directory for writing, under its temporary name. */
int ks_outfile_open(struct ks_rundir *rd, const char *name,
		    struct ks_outfile *of, struct ks_err *err);
/* Writes all of buf, or records the error (reported by commit). */
int ks_outfile_write(struct ks_outfile *of, const void *buf, size_t len);
int ks_outfile_printf(struct ks_outfile *of, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Flushes to disk, sets mode (KS_DELIVERABLE_MODE or KS_FILE_MODE) and
 * gives the file its final name, which must be free: an existing file of
 * that name is never replaced (-EEXIST).  On any error, now or earlier,
 * removes the temporary file and reports which file failed and why. */
int ks_outfile_commit(struct ks_outfile *of, mode_t mode, struct ks_err *err);
/* Abandons the file: closes and removes it. */
void ks_outfile_abort(struct ks_outfile *of);

/* Renames old to new unless new exists (-EEXIST then).  renameat2 with
 * RENAME_NOREPLACE is atomic; where the file system lacks it, link() gives
 * the same guarantee at the cost of a moment with two names. */
int ks_rename_noreplace(int olddirfd, const char *old, int newdirfd,
			const char *new_name);

/* Writes a whole file in one go (open, write, commit). */
int ks_outfile_put(struct ks_rundir *rd, const char *name, const void *buf,
		   size_t len, mode_t mode, struct ks_err *err);

#endif
