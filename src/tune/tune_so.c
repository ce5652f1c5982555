/*
 * libkscope-tune.so: the ks_tune_* functions of ks_tune (linked in whole
 * with what they use; tune.map exports only them), for C programs that
 * search a kernel's parameters (include/kscope/tune.h).  This file only
 * gives the shared library a source of its own.
 */
#include "kscope/tune.h"
