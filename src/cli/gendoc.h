/*
 * kscope's manual pages and bash completion, generated from the command
 * table and the option tables (src/cli/gendoc.c).
 */
#ifndef KS_GENDOC_H
#define KS_GENDOC_H

#include <stdbool.h>

/* Whether arg names one of the generator modes of `kscope help`. */
bool ks_gendoc_is_mode(const char *arg);

/* Runs `kscope help MODE ARG`; argv[0] is the mode:
 *   --man DIR          writes DIR/kscope.1 and DIR/kscope-<command>.1
 *   --completion FILE  writes the bash completion script to FILE
 * DIR, and FILE's directory, must exist.  Returns a KS_EXIT_* status. */
int ks_gendoc_main(int argc, char **argv);

#endif
