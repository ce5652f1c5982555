/*
 * sharedir.h: where kscope's own data files are (share/kscope/<what>),
 * found next to the executable or library that holds this code.
 *
 * kscope runs from its build tree (build/kscope and the libraries in
 * build/lib, with the data copied into build/share/kscope) and installed
 * (<prefix>/bin/kscope, libkscope-predict.so in <prefix>/lib, the data in
 * <prefix>/share/kscope): the places are relative to the object's own
 * file, so that no path needs to be compiled in.  A library's file is its
 * link map's name; the executable's is /proc/self/exe, since the loader
 * knows it only by argv[0] (a bare name when started from PATH).
 */
#ifndef KS_SHAREDIR_H
#define KS_SHAREDIR_H

#include <stddef.h>

#define KS_SHARE_MAX_DIRS 3

/* Writes the candidate directories for share/kscope/<what>, nearest first,
 * into dirs (each of size bytes).  Returns how many (0 if the object's file
 * cannot be found).  The directories need not exist. */
size_t ks_share_dirs(const char *what, char dirs[][4096], size_t max);

/* The first candidate directory that holds the file `marker` (or that
 * exists, if marker is NULL), as a real path in buf.  Returns 0, or
 * -ENOENT with buf holding the candidates tried, separated by ", ". */
int ks_share_find(const char *what, const char *marker, char *buf, size_t size);

#endif
