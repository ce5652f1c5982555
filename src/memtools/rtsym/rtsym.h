/*
 * Source locations for the findings files of kscope's compiled front end
 * (libkscope-mt.so, src/memtools/rt).  The runtime, inside the program,
 * writes each stack frame as its address, its module's path and its
 * address in the module's file ("ip", "obj", "off"); after the run kscope
 * names them here with libdw (src/common/dwsym): function, file,
 * directory and line, an inlined call expanded into a frame of its own,
 * the way kscope's Valgrind tool writes frames, so that the reports
 * (src/memtools/report) read both alike.
 */
#ifndef KS_RTSYM_H
#define KS_RTSYM_H

#include "err.h"

/* Rewrites the findings file at path in place (a new file renamed over
 * it, mode kept): every frame with "obj" and "off" but no "file" gets its
 * names; other records are copied as they are, a last line cut short
 * included.  0, or a negative errno with err set; the file is then left
 * as it was. */
int ks_rtsym_file(const char *path, struct ks_err *err);

#endif
