/*
 * libkscope-vizbin.so: the ks_vb_* functions of ks_format (linked in
 * whole; vizbin.map exports only them), for programs that write or read
 * visualize_data.bin containers (include/kscope/vizbin.h).  This file
 * only gives the shared library a source of its own.
 */
#include "kscope/vizbin.h"
