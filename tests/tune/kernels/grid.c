/*
 * A space of 144 points for kscope tune's strategy tests
 * (tests/tune/tune_e2e.py, scenario strategies).  It is never compiled:
 * fake_build.sh reads X and Y from a variant and writes a tiny program
 * that prints a planted time, best at X=7 Y=4.
 */
#define X 0 // tunable
#define Y 0 // tunable
