#!/usr/bin/env bash
# Runtime tests of libkscope.so: runs example programs with the library
# preloaded (LD_PRELOAD, KSCOPE_RUN_DIR=<fresh directory>) and checks the
# raw files with rawcheck, and that the programs behave the same with and
# without it (stdout, stderr, exit status).
#
#   usage: test_rt.sh SCENARIO LIBKSCOPE EXAMPLES_DIR RAWCHECK SIGCHECK CLOCKSPIN TICKER
#
# Each scenario is one ctest test (sample/rt/SCENARIO); the list is in
# tests/sample/rt/CMakeLists.txt.  Bounds on sample counts and times are
# generous: the machine may be busy.  Bounds on how much a sampler saw are
# on timer periods (a sample stands for 1 + its overrun), not signals: on
# a busy machine the kernel folds CPU-time periods into fewer signals.
# Exit 0 pass, 1 fail, 77 skipped.
set -uo pipefail
scenario=$1 LIB=$2 EX=$3 RAWCHECK=$4 SIGCHECK=$5 CLOCKSPIN=$6 TICKER=$7

# Nothing from the caller's environment may change what is measured.
for v in $(compgen -e | grep '^KSCOPE_' || true); do unset "$v"; done
unset LD_PRELOAD

work=$(mktemp -d /tmp/kscope-rt.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

fail() {
	echo "FAIL [$scenario]: $*" >&2
	for f in "$work"/*.err; do
		[[ -s $f ]] && { echo "--- $f" >&2; head -20 "$f" >&2; }
	done
	exit 1
}

SIGRTMIN=$(kill -l RTMIN)

# run NAME [VAR=VALUE...] -- CMD...: runs CMD with the runtime preloaded,
# its raw files in $work/NAME; output in NAME.out/.err, status in NAME.status.
# The log level is info, as `kscope sample` passes it by default: a normal
# run must still print nothing.
run() {
	local name=$1
	shift
	local vars=()
	while [[ $1 != -- ]]; do vars+=("$1"); shift; done
	shift
	mkdir -p "$work/$name"
	env KSCOPE_LOG_LEVEL=info "${vars[@]}" LD_PRELOAD="$LIB" KSCOPE_RUN_DIR="$work/$name" "$@" \
		>"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.status"
}

# plain NAME CMD...: the same without kscope.
plain() {
	local name=$1
	shift
	"$@" >"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.status"
}

status() { cat "$work/$1.status"; }

# raw_files NAME: the raw files of run NAME, sorted.
raw_files() { ls "$work/$1/raw/"*.ksraw 2>/dev/null | sort; }

# one_file NAME: the single raw file of run NAME.
one_file() {
	local files
	files=$(raw_files "$1")
	[[ $(echo "$files" | grep -c .) -eq 1 ]] || fail "$1: expected one raw file, got: $files"
	echo "$files"
}

# expect FILE EXPECTATION...: rawcheck must accept them.
expect() {
	local out
	out=$("$RAWCHECK" "$@" 2>&1) || { echo "$out" >&2; fail "rawcheck ${*}"; }
	echo "$out"
}

# same NAME VARS -- CMD...: same stdout, stderr and status with and without kscope.
same() {
	local name=$1
	shift
	local cmd=("$@")
	while [[ ${cmd[0]} != -- ]]; do cmd=("${cmd[@]:1}"); done
	cmd=("${cmd[@]:1}")
	plain "$name.plain" "${cmd[@]}"
	run "$name" "$@"
	cmp -s "$work/$name.plain.out" "$work/$name.out" || {
		diff "$work/$name.plain.out" "$work/$name.out" >&2
		fail "$name: stdout differs with kscope"
	}
	cmp -s "$work/$name.plain.err" "$work/$name.err" || {
		diff "$work/$name.plain.err" "$work/$name.err" >&2
		fail "$name: stderr differs with kscope"
	}
	[[ $(status "$name.plain") == $(status "$name") ]] ||
		fail "$name: exit status $(status "$name") with kscope, $(status "$name.plain") without"
}

# start_bg NAME PRELOAD(0|1) CMD...: starts CMD in the background with
# SIGINT at its default action (a shell's background jobs ignore it) and
# waits until it printed its first line; sets $bg_pid.
start_bg() {
	local name=$1 preload=$2
	shift 2
	mkdir -p "$work/$name"
	if [[ $preload == 1 ]]; then
		env --default-signal=INT LD_PRELOAD="$LIB" KSCOPE_RUN_DIR="$work/$name" "$@" \
			>"$work/$name.out" 2>"$work/$name.err" &
	else
		env --default-signal=INT "$@" >"$work/$name.out" 2>"$work/$name.err" &
	fi
	bg_pid=$!
	for _ in $(seq 100); do
		[[ -s $work/$name.out ]] && return 0
		sleep 0.05
	done
	fail "$name did not start"
}

case $scenario in
cpu_split)
	run c -- "$EX/cpu_split" 1.5
	[[ $(status c) == 0 ]] || fail "cpu_split exited $(status c)"
	[[ ! -s $work/c.err ]] || fail "the runtime wrote to stderr"
	f=$(one_file c)
	expect "$f" end=exit end_status=0 end_last=1 threads=1 thread_begins=1 thread_ends=1 \
		'period_rate>=150' 'period_rate<=450' 'cpu_periods>=200' 'modules>=3' exe_module=1 \
		'max_frames>=3' seq_ok=1 bad=0 chunks_bad=0 'counters>=10' \
		signal_cpu=$((SIGRTMIN + 4)) signal_real=0 dropped=0 cmdline_argc=2
	[[ $(stat -c %a "$work/c/raw") == 750 ]] || fail "raw/ mode $(stat -c %a "$work/c/raw")"
	[[ $(stat -c %a "$f") == 640 ]] || fail "raw file mode $(stat -c %a "$f")"
	[[ $(basename "$f") =~ ^[0-9]+\.ksraw$ ]] || fail "raw file name $f"
	;;
starved)
	# A program that reads its CPU clock every 2.5 ms shares one CPU
	# with three busy loops.  The kernel then checks its CPU-time timer
	# late and folds several periods into one signal (on a 2-core VM, 10
	# to 75 signals per CPU second instead of 300); each sample must say
	# how many periods it stands for, so that the periods still add up
	# to the CPU time.  The loops end by themselves after 30 s, should
	# this script be killed before it kills them.
	cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
	taskset -pc "$cpu" $$ >/dev/null || fail "cannot pin the test to CPU $cpu"
	loops=()
	for _ in 1 2 3; do
		timeout 30 bash -c 'while :; do :; done' &
		loops+=($!)
	done
	trap 'kill "${loops[@]}" 2>/dev/null; rm -rf "$work"' EXIT
	run s -- "$CLOCKSPIN" 1
	kill "${loops[@]}"
	wait "${loops[@]}" 2>/dev/null
	[[ $(status s) == 0 && $(cat "$work/s.out") == done ]] ||
		fail "clockspin exited $(status s)"
	f=$(one_file s)
	expect "$f" end=exit end_status=0 threads=1 'period_rate>=150' 'period_rate<=450' \
		'cpu_periods>=150' bad=0 dropped=0
	;;
threads)
	run t -- "$EX/threads" 4 0.5
	f=$(one_file t)
	expect "$f" end=exit threads=5 thread_begins=5 thread_ends=5 workers_with_samples=4 \
		'periods>=150' seq_ok=1 bad=0
	;;
many_threads)
	run m -- "$EX/many_threads" 2000 100
	[[ $(status m) == 0 ]] || fail "many_threads exited $(status m)"
	f=$(one_file m)
	expect "$f" end=exit end_last=1 thread_begins=2001 thread_ends=2001 seq_ok=1 bad=0 \
		chunks_bad=0
	;;
fork_exec)
	run f -- "$EX/fork_exec"
	[[ $(status f) == 0 ]] || fail "fork_exec exited $(status f)"
	files=$(raw_files f)
	n=$(echo "$files" | grep -c .)
	[[ $n == 3 ]] || fail "expected 3 raw files (parent, child, child after exec), got $n"
	kinds=""
	for f in $files; do
		expect "$f" end_last=1 bad=0 seq_ok=1 >/dev/null
		if [[ $(basename "$f") =~ ^[0-9]+\.1\.ksraw$ ]]; then
			expect "$f" end=exit forked=0 threads=1 >/dev/null
			kinds+="execd "
		elif "$RAWCHECK" "$f" forked=1 >/dev/null; then
			expect "$f" end=exec threads=1 >/dev/null
			kinds+="child "
		else
			expect "$f" end=exit end_status=0 >/dev/null
			kinds+="parent "
		fi
	done
	for k in parent child execd; do
		[[ $kinds == *"$k "* ]] || fail "no raw file of the $k (have: $kinds)"
	done
	;;
sigint)
	start_bg sp 0 "$EX/sigint"
	sleep 1
	kill -INT "$bg_pid"
	wait "$bg_pid"
	plain_status=$?
	start_bg s 1 "$EX/sigint"
	sleep 1
	kill -INT "$bg_pid"
	wait "$bg_pid"
	st=$?
	[[ $st == "$plain_status" ]] || fail "status $st with kscope, $plain_status without"
	[[ $st == 130 ]] || fail "not killed by SIGINT (status $st)"
	f=$(one_file s)
	expect "$f" end=signal end_status=2 end_last=1 'samples>=10' thread_ends=1
	;;
sigint_handler)
	start_bg s 1 "$EX/sigint" handler
	sleep 0.5
	kill -INT "$bg_pid"
	wait "$bg_pid"
	st=$?
	[[ $st == 3 ]] || fail "the program's SIGINT handler did not run (status $st)"
	grep -q "handler ran" "$work/s.out" || fail "no output from the handler"
	f=$(one_file s)
	expect "$f" end=exit end_status=3 end_last=1 'samples>=3'
	;;
kill9)
	start_bg k 1 "$EX/sigint"
	sleep 1.6
	kill -KILL "$bg_pid"
	wait "$bg_pid"
	f=$(one_file k)
	# Killed without warning: what the writer had written (it flushes
	# every second) is readable.
	expect "$f" end=none 'samples>=5' 'thread_begins>=1'
	;;
regions)
	same r -- "$EX/regions"
	f=$(one_file r)
	expect "$f" end=exit regions_ok=1 region_pushes=4 region_pops=4 marks=1 \
		range_starts=2 range_ends=2 ranges_matched=2 pauses=1 resumes=1 \
		max_name=255 thread_begins=2 thread_ends=2
	;;
same_output)
	same o1 -- "$EX/cpu_split" 0.3
	same o2 -- "$EX/threads" 3 0.2
	same o3 -- "$EX/many_threads" 300 50
	same o4 -- "$EX/fork_exec"
	same o5 -- "$SIGCHECK" query
	same o6 -- "$SIGCHECK" errno
	same o7 KSCOPE_REALTIME_FREQ=1000 -- "$EX/cpu_split" 0.3
	same o8 KSCOPE_REALTIME_FREQ=1000 -- "$SIGCHECK" errno
	same o9 KSCOPE_UNWIND=fp KSCOPE_CPUTIME_FREQ=2000 -- "$EX/threads" 2 0.3
	;;
blocking)
	# The real-time sampler signals sleeping threads: their calls must
	# still last as long as without kscope (rt_restart.c).
	same b KSCOPE_REALTIME_FREQ=1000 -- "$SIGCHECK" sleep
	if grep -q short "$work/b.out"; then
		cat "$work/b.out" >&2
		fail "a blocking call was cut short"
	fi
	grep -q "poll with SIGALRM: -1 errno=EINTR interrupted got=1" "$work/b.out" ||
		fail "the program's own signal no longer interrupts poll"
	f=$(one_file b)
	expect "$f" end=exit 'real_samples>=500'
	;;
own_signal)
	same o -- "$SIGCHECK" own
	grep -q "after: on_sig, got 3" "$work/o.out" || fail "the program's handler missed signals"
	f=$(one_file o)
	expect "$f" end=exit 'periods>=50' "signal_cpu>=$((SIGRTMIN + 6))"
	# Blocking the signal to sigwait for it also gives it to the program.
	same w -- "$SIGCHECK" sigwait
	grep -q "sigwaitinfo: SIGRTMIN+4 value=42" "$work/w.out" || fail "sigwaitinfo did not get its signal"
	f=$(one_file w)
	expect "$f" end=exit 'periods>=50' "signal_cpu>=$((SIGRTMIN + 6))"
	;;
all_signals)
	plain ap "$SIGCHECK" all
	run a -- "$SIGCHECK" all
	cmp -s "$work/ap.out" "$work/a.out" || fail "stdout differs with kscope"
	[[ $(status a) == 0 ]] || fail "status $(status a)"
	grep -Eq '^kscope: warn: the program uses signal [0-9]+; sampling stopped$' "$work/a.err" ||
		fail "no warning that sampling stopped"
	[[ $(wc -l <"$work/a.err") == 1 ]] || fail "more than the one warning on stderr"
	f=$(one_file a)
	expect "$f" end=exit signal_cpu=0
	;;
closed_fds)
	# The program closes kscope's descriptors and reuses their numbers:
	# kscope reopens its file by name and never touches the program's.
	same c KSCOPE_COUNTERS=page-faults -- "$SIGCHECK" closefds
	grep -q "read 5 hello" "$work/c.out" || fail "the program's pipe lost data"
	f=$(one_file c)
	expect "$f" end=exit end_last=1 bad=0 'periods>=50' 'ts_max>=0.3'
	;;
realtime)
	run r KSCOPE_CPUTIME_FREQ=0 KSCOPE_REALTIME_FREQ=100 -- "$EX/cpu_split" 0.6
	f=$(one_file r)
	expect "$f" end=exit cpu_samples=0 'real_samples>=30' signal_cpu=0 \
		signal_real=$((SIGRTMIN + 5))
	;;
window)
	# Windows are wall-clock times: sample with the real-time sampler,
	# whose rate does not depend on how much CPU a busy machine gives.
	run w KSCOPE_DELAY=0.4 KSCOPE_DURATION=0.4 KSCOPE_REALTIME_FREQ=200 -- \
		"$EX/cpu_split" 1.2
	f=$(one_file w)
	expect -w 0.38-0.82 "$f" end=exit outside_windows=0 'samples>=20' 'samples<=300'
	;;
periods)
	run p KSCOPE_PERIODS="realtime:0.3:0.2:2" KSCOPE_REALTIME_FREQ=200 -- "$EX/cpu_split" 1.3
	f=$(one_file p)
	expect -w 0.28-0.52,0.78-1.02 "$f" end=exit outside_windows=0 'samples>=20' \
		'samples<=300'
	# A process-CPU-time window: 0.2 CPU-seconds of 1.0.
	run q KSCOPE_PERIODS="cputime:0.3:0.2:1" -- "$EX/cpu_split" 1.0
	f=$(one_file q)
	expect "$f" end=exit 'periods>=15' 'periods<=100'
	;;
window_records)
	# Every kind of record is kept inside the window only: regions,
	# marks, ranges and the process counters as well as samples.  The
	# window is 0.4-0.8 s; a region or a range begun inside may end a
	# millisecond later, and the records are checked by their beginning.
	run wr KSCOPE_DELAY=0.4 KSCOPE_DURATION=0.4 KSCOPE_REALTIME_FREQ=200 -- "$TICKER" 1.2
	[[ $(cat "$work/wr.out") == done ]] || fail "ticker's output changed"
	f=$(one_file wr)
	expect -w 0.39-0.81 "$f" end=exit outside_windows=0 records_outside_windows=0 \
		regions_ok=1 'marks>=20' 'marks<=300' 'region_pushes>=40' 'range_starts>=20' \
		'ranges_matched>=20' 'counters>=4' 'samples>=20'
	# MPI calls too: a window that never opens during the run keeps none.
	if [[ -x $EX/mpi_ring ]] && command -v mpirun >/dev/null; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
		mkdir -p "$work/wm"
		if mpirun -np 2 --oversubscribe -x LD_PRELOAD="$LIB" -x KSCOPE_RUN_DIR="$work/wm" \
			-x KSCOPE_DELAY=100 "$EX/mpi_ring" >"$work/wm.out" 2>"$work/wm.err"; then
			for g in $(raw_files wm); do
				expect "$g" mpi=0 samples=0 counters=0 >/dev/null
			done
		fi
	fi
	;;
periods_sequence)
	# The periods run one after the other (the design's constraint
	# model), not all from the start: 0.2-0.4 s, then the second period
	# starts at 0.4 and opens 0.1 s later, 0.5-0.7 s.  Measured on two
	# different elapsed-time clocks, as the design allows.
	run ps KSCOPE_PERIODS="realtime:0.2:0.2:1 monotonic:0.1:0.2:1" KSCOPE_REALTIME_FREQ=200 \
		-- "$TICKER" 1.0
	f=$(one_file ps)
	expect -w 0.19-0.41,0.49-0.71 "$f" end=exit outside_windows=0 records_outside_windows=0 \
		regions_ok=1 'samples>=20'
	# Both windows saw samples (a union from the start would have put
	# the second at 0.1-0.3 s, inside the first's reach).
	expect -w 0.49-0.71 "$f" 'samples>=10' >/dev/null || fail "nothing sampled in 0.5-0.7 s"
	expect -w 0.19-0.41 "$f" 'samples>=10' >/dev/null || fail "nothing sampled in 0.2-0.4 s"
	# The periods start after --delay.
	run pd KSCOPE_DELAY=0.3 KSCOPE_PERIODS="realtime:0.2:0.2:1" KSCOPE_REALTIME_FREQ=200 \
		-- "$TICKER" 0.9
	f=$(one_file pd)
	expect -w 0.49-0.71 "$f" end=exit outside_windows=0 records_outside_windows=0 'samples>=10'
	# A process-CPU-time period after an elapsed-time one: it starts
	# when the first ends (0.2 s) and opens after 0.1 more CPU-seconds.
	run pc KSCOPE_PERIODS="realtime:0.1:0.1:1 process_cputime:0.1:0.1:1" -- "$EX/cpu_split" 1.0
	f=$(one_file pc)
	expect -w 0.09-0.21,0.29-1000 "$f" end=exit outside_windows=0 'periods>=30' 'periods<=300'
	;;
realtime_budget)
	# The real-time sampler keeps to its budget of samples a second
	# (KS_RAW_REALTIME_BUDGET, 4000) however many threads wait: 1000
	# waiting threads at 200 Hz would be 200000 signals a second, each
	# waking a thread.  Slowed, each sample stands for more periods, so
	# the periods still cover every thread's life.
	run rb KSCOPE_CPUTIME_FREQ=0 KSCOPE_REALTIME_FREQ=200 -- "$EX/idle_threads" 1000 0.3
	[[ $(cat "$work/rb.out") == ok ]] || fail "idle_threads: $(cat "$work/rb.out")"
	f=$(one_file rb)
	expect "$f" end=exit 'threads>=1001' 'slowed>=100' 'real_rate<=6000' \
		'real_coverage>=0.8' 'real_coverage<=1.25'
	# Under the budget nothing is slowed, and the periods cover the
	# threads' lives as well.
	run rs KSCOPE_CPUTIME_FREQ=0 KSCOPE_REALTIME_FREQ=200 -- "$EX/idle_threads" 10 0.3
	f=$(one_file rs)
	expect "$f" end=exit slowed=0 'real_coverage>=0.8' 'real_coverage<=1.25'
	;;
unwind_fp)
	# threads' busy() keeps a frame (it calls thread_cpu()), unlike
	# cpu_split's leaf loop, so the walk has callers to find.
	run u KSCOPE_UNWIND=fp -- "$EX/threads" 2 0.3
	f=$(one_file u)
	expect "$f" end=exit frame_pointers=1 'periods>=50' 'max_frames>=3'
	;;
counters)
	run c KSCOPE_COUNTERS=cycles,page-faults -- "$EX/cpu_split" 0.3
	[[ ! -s $work/c.err ]] || fail "unsupported counters made the runtime print"
	f=$(one_file c)
	expect "$f" end=exit counter_info=2 'periods>=30'
	;;
small_buffers)
	# Many small buffers: the real-time sampler is not limited by the
	# kernel's tick like the CPU-time one (HZ samples per second at most).
	# 3 threads at 1300 Hz stay within its budget of 4000 samples a
	# second, so it is not slowed: about 3000 samples in 0.8 s.
	run b KSCOPE_BUFFER_SAMPLES=16 KSCOPE_REALTIME_FREQ=1300 -- "$EX/threads" 2 0.8
	f=$(one_file b)
	expect "$f" end=exit seq_ok=1 bad=0 chunks_bad=0 'real_samples>=1000' 'chunks>=8' \
		thread_begins=3 thread_ends=3
	;;
tids)
	run t KSCOPE_TIDS=2 -- "$EX/threads" 3 0.3
	f=$(one_file t)
	expect "$f" end=exit thread_begins=4 threads_with_samples=1 workers_with_samples=1 \
		'periods>=30'
	;;
off)
	# Preloaded without KSCOPE_RUN_DIR, the library does nothing.
	for args in "$EX/cpu_split 0.2" "$SIGCHECK query" "$EX/fork_exec"; do
		plain offp $args
		LD_PRELOAD="$LIB" $args >"$work/off.out" 2>"$work/off.err"
		[[ $? == $(status offp) ]] || fail "$args: status differs"
		cmp -s "$work/offp.out" "$work/off.out" || fail "$args: stdout differs"
		[[ ! -s $work/off.err ]] || fail "$args: stderr not empty"
	done
	[[ -z $(find "$work" -name '*.ksraw') ]] || fail "raw files written without KSCOPE_RUN_DIR"
	;;
mpi)
	[[ -x $EX/mpi_ring ]] || { echo "skip: mpi_ring not built (no mpicc)"; exit 77; }
	command -v mpirun >/dev/null || { echo "skip: no mpirun"; exit 77; }
	export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
	mpi=(mpirun -np 2 --oversubscribe)
	"${mpi[@]}" "$EX/mpi_ring" >"$work/mp.out" 2>"$work/mp.err" ||
		{ echo "skip: mpirun does not work here"; cat "$work/mp.err"; exit 77; }
	mkdir -p "$work/m"
	"${mpi[@]}" -x LD_PRELOAD="$LIB" -x KSCOPE_RUN_DIR="$work/m" "$EX/mpi_ring" \
		>"$work/m.out" 2>"$work/m.err" || fail "mpi_ring failed with kscope"
	cmp -s "$work/mp.out" "$work/m.out" || fail "mpi_ring output differs with kscope"
	files=$(raw_files m)
	[[ $(echo "$files" | grep -c .) == 2 ]] || fail "expected 2 raw files, got: $files"
	ranks=""
	for f in $files; do
		expect "$f" end=exit 'mpi>=5' 'mpi_peers>=2' 'mpi_bytes>=8' >/dev/null
		ranks+="$("$RAWCHECK" "$f" | sed -n 's/^header: .* rank=\([-0-9]*\) .*/\1/p') "
	done
	[[ $ranks == "0 1 " || $ranks == "1 0 " ]] || fail "ranks in headers: $ranks"
	;;
*)
	echo "unknown scenario $scenario" >&2
	exit 2
	;;
esac
echo "PASS [$scenario]"
