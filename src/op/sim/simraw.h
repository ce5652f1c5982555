/*
 * The raw file of kscope op --simulate: what kscope's Valgrind tool
 * (src/memtools/vg/kst_hot*.c, --analysis=hotspot) writes at the end of
 * the program, and what the post-processor (src/op/sim) turns into the
 * deliverables.  This header is the contract between the two; it holds
 * the constants both use, and the format below.
 *
 * Text, one record per line, fields separated by one TAB; the first field
 * names the record.  Integers are decimal unless said otherwise;
 * addresses are "0x" and lower-case hex.  A string field (path, name,
 * pattern) is always the last field of its record and escapes '\\' as
 * "\\\\", TAB as "\\t" and newline as "\\n".
 *
 *   kscope-hotspot  FORMAT                 first line; FORMAT is 1
 *   pid     PID
 *   exe     PATH                           the program as started
 *   cache   LEVEL SIZE ASSOC LINE LATENCY SCOPE NAME
 *           one per data-cache level, LEVEL 0 (closest to the core) up;
 *           SIZE bytes, ASSOC ways, LINE bytes, LATENCY cycles an access
 *           served by this level costs, SCOPE "private" (one per thread)
 *           or "shared" (one for all threads: only the last level can be).
 *           NAME as the user gave it ("L1", "L2", "LL").
 *   icache  SIZE ASSOC LINE                the instruction cache beside
 *           level 0; its misses go to level 1 (or memory)
 *   memory  LATENCY                        cycles of an access no level held
 *   interval CYCLES                        simulated cycles per bandwidth
 *           bucket (the tool doubles it when a thread has used
 *           KS_SIM_MAX_BUCKETS, merging pairs; this is the final value)
 *   region  PATTERN                        the --kernel-name filter, or "*"
 *   file    ID PATH                        a source file (IDs from 0)
 *   fn      ID NAME                        a function name (IDs from 0)
 *   ins     ID ADDR LEN BYTES FILE LINE FN PIPE FLOPS BASE [VLANES VELEM]
 *           one per instruction ever instrumented (IDs from 0, unique
 *           per (ADDR, LEN)).  LEN: 1 to KS_SIM_MAX_INS_LEN (the engine
 *           sees Valgrind's client-request marker, a 19-byte sequence, as
 *           one instruction).  BYTES: the instruction's first
 *           min(LEN, KS_SIM_MAX_INS_BYTES) bytes in hex.  FILE, FN: IDs, -1 when unknown; LINE 0
 *           when unknown.  PIPE: one of KS_SIM_PIPE_NAMES.  FLOPS: floating-
 *           point operations per execution (each SIMD lane counts; a fused
 *           multiply-add counts 2).  BASE: base cycles per execution.
 *           VLANES, VELEM (appended later: a file without them reads as
 *           0 0): a VECTOR instruction's lanes of lane-wise work and their
 *           element bits (addss 1 32, mulpd xmm 2 64, vaddps ymm 8 32), at
 *           most KS_SIM_VECTOR_BITS / VELEM lanes; 0 0 for any other
 *           instruction and a VECTOR one without lane-wise work (bitwise
 *           logic, shuffles: the engine's op_lanes says what counts).
 *   sb      ID COUNT INS...                a translated block (superblock):
 *           its instruction IDs in execution order
 *   thread  TID INSTRS CYCLES              a thread that ran counted code:
 *           TID is Valgrind's thread id (1 = main), INSTRS and CYCLES its
 *           totals in the region
 *   x       TID INS EXECS CYCLES LOADB STOREB IMISS ACC0 MISS0 ACC1 MISS1 ...
 *           per thread and instruction, for each instruction that thread
 *           executed in the region: executions, cycles (base + memory
 *           latencies), bytes loaded and stored, instruction-cache misses,
 *           then for each data-cache level its accesses and misses
 *           (an access that misses level k is an access of level k+1)
 *   bw      TID BUCKET RD0 WR0 RD1 WR1 ... RDn WRn
 *           bytes moved in bucket BUCKET (simulated cycles [BUCKET *
 *           interval, (BUCKET+1) * interval) of that thread) across each
 *           boundary: boundary 0 is registers <-> level 0 (RD: bytes
 *           loaded, WR: bytes stored), boundary k is level k-1 <-> level k,
 *           the last (k = levels) is the last level <-> memory (RD: lines
 *           filled from below, WR: dirty lines written back below).
 *           Buckets with nothing moved are left out.
 *   tr      TID SB EXECUTED START END
 *           one execution of block SB by thread TID: its first EXECUTED
 *           instructions ran (a side exit leaves early) from simulated
 *           cycle START to END.  At most the --trace-limit first.
 *   sets    LEVEL NSETS                    the level whose sets the `set`
 *           records count: 1 (the second), or 0 when there is one level;
 *           NSETS its number of sets
 *   set     INDEX LOADS STORES HITS MISSES ALLOCS EVICTW EVICTWO
 *           one per set INDEX (0 to NSETS-1) that was accessed, summed
 *           over threads: the accesses of that level by data loads and
 *           stores (a load-and-modify is a store) in the region, its
 *           hits and misses, lines allocated (one per line that missed),
 *           and the lines those allocations evicted dirty (written back)
 *           or clean.  An access touching two lines counts once, in the
 *           set of its first line that missed (or its first line), so
 *           the sets sum to the x records' ACC and MISS of LEVEL.
 *   hl      ADDR INS LOADS STORES MISS0 ... MISSn-1
 *           the data accesses of instruction INS in the region that
 *           missed level 0 on the level-0 line at address ADDR (the
 *           first line that missed, for an access touching two): loads
 *           and stores, and how many missed each level (MISS0 = LOADS +
 *           STORES).  One per (line, instruction) pair the tool kept
 *   hlwb    ADDR COUNT                     dirty write-backs of the level-0
 *           line at ADDR from level 0 (in the region)
 *   hlother PAIRS LOADS STORES WB MISS0 ... MISSn-1
 *           the sums of the hl and hlwb pairs the tool dropped (PAIRS of
 *           them: its table holds a bounded number, and a new pair
 *           replaces the coldest of its bucket): with these, the hl
 *           records sum to the x records' MISS counts
 *   end     HOW CODE DROPPED
 *           HOW "exit" (CODE the exit status) or "signal" (CODE the
 *           signal); DROPPED the tr records past the trace limit.
 *           Missing when the tool did not finish (the file is then cut
 *           short and the reader says so).
 *
 * The order is: kscope-hotspot, pid, exe, cache..., icache, memory,
 * region, file/fn/ins/sb in any interleaving (each ID defined before it is
 * used), thread, x, interval, bw, tr, sets, set, hl/hlwb, hlother, end.
 * The sets to hlother records came later: a file without them still
 * reads (no cache sets or lines), and an older reader skips them as
 * unknown records.
 */
#ifndef KS_SIMRAW_H
#define KS_SIMRAW_H

#define KS_SIM_FORMAT 1
#define KS_SIM_MAGIC "kscope-hotspot"
/* Longest instruction, and most bytes of one the raw file carries. */
#define KS_SIM_MAX_INS_LEN 64
#define KS_SIM_MAX_INS_BYTES 16
/* Bits of the widest vector the engine runs (Valgrind on amd64: AVX2),
 * against which vector lanes are counted. */
#define KS_SIM_VECTOR_BITS 256
/* Data-cache levels the tool simulates at most. */
#define KS_SIM_MAX_LEVELS 4
/* Bandwidth buckets per thread before the interval doubles. */
#define KS_SIM_MAX_BUCKETS 65536
/* Default --trace-limit: block executions in the pipeline chart.  Each
 * becomes a few slices of some 200 bytes, in trace.json and again in
 * visualize_data.bin: 10000 keep both to a few MB. */
#define KS_SIM_DEFAULT_TRACE_LIMIT 10000

/* Pipe classes, in the order of their numeric values. */
enum ks_sim_pipe {
	KS_SIM_PIPE_SCALAR = 0, /* integer and address arithmetic, moves */
	KS_SIM_PIPE_VECTOR,     /* floating-point or SIMD arithmetic */
	KS_SIM_PIPE_LOAD,       /* loads data and does no FP/SIMD arithmetic */
	KS_SIM_PIPE_STORE,      /* stores data (and does no FP/SIMD arithmetic) */
	KS_SIM_PIPE_BRANCH,     /* may transfer control: jumps, calls, returns */
	KS_SIM_PIPE_COUNT
};
#define KS_SIM_PIPE_NAMES { "SCALAR", "VECTOR", "LOAD", "STORE", "BRANCH" }

#endif
