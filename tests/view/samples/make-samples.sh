#!/bin/sh
# make-samples.sh: remakes the sample results kscope view's tests run on.
#
# Each directory here is the unchanged run directory of one real kscope
# run on one of kscope's examples, renamed from <command>_<time>_<pid> to
# a stable <command>_<what> name (the prefix still says which command made
# it).  The runs are kept tiny so that the samples stay small:
#
#   op_vadd           kscope op on examples/opencl/vadd (1024 elements, the
#                     first launch), with --flops and a quick calibration in
#                     a private cache, so visualize_data.bin has a roofline
#   simulate_matmul   kscope op --simulate on bench/workloads/mt_matmul
#                     (16x16, 2 threads, the worker function only,
#                     the first 100 blocks in the pipeline chart)
#   predict_vadd      kscope predict on examples/predict/vadd.kpp (N=8192)
#   sample_demo       kscope sample on examples/demo/demo (make demo's program)
#   memcheck_uaf      kscope memcheck on examples/memory/uaf
#   falseshare        kscope falseshare on examples/threads/falseshare
#   contention        kscope contention on examples/threads/contention
#
# Usage (from anywhere; BUILD is a configured and built kscope build tree):
#
#   tests/view/samples/make-samples.sh BUILD
#
# The old samples are replaced.  Runs that depend on this machine (times,
# pids, addresses) differ from one remake to the next; the tests compare
# what kscope view serves with the files here, never with fixed numbers.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=$(cd "${1:?usage: make-samples.sh BUILD}" && pwd)
kscope=$build/kscope
[ -x "$kscope" ] || { echo "make-samples.sh: $kscope is missing: build first" >&2; exit 1; }

tmp=$(mktemp -d /tmp/ks-view-samples.XXXXXX)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

# A private cache: the calibration stays out of the user's ~/.cache.  PoCL
# keeps its compiled kernels in the usual place, which spares recompiling.
export XDG_CACHE_HOME="$tmp/cache"
if [ -z "${POCL_CACHE_DIR:-}" ] && [ -d "$HOME/.cache/pocl/kcache" ]; then
	export POCL_CACHE_DIR="$HOME/.cache/pocl/kcache"
fi
for v in $(env | sed -n 's/^\(KSCOPE_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

# run NAME COMMAND ARGS...: one kscope run into $tmp/NAME, then its run
# directory moved to $tmp/out/NAME.
run() {
	name=$1; shift
	echo "make-samples.sh: $name: kscope $*" >&2
	"$kscope" "$@" > "$tmp/$name.stdout" 2> "$tmp/$name.stderr" || {
		echo "make-samples.sh: $name failed:" >&2
		tail -20 "$tmp/$name.stderr" >&2
		exit 1
	}
	set -- "$tmp/$name"/*_*
	[ $# -eq 1 ] && [ -d "$1" ] || { echo "make-samples.sh: $name: no run directory" >&2; exit 1; }
	mv "$1" "$tmp/out/$name"
}

mkdir -p "$tmp/out"

"$kscope" calibrate --quick --no-chip > /dev/null 2> "$tmp/calibrate.stderr" || {
	tail -20 "$tmp/calibrate.stderr" >&2; exit 1; }
run op_vadd op -o "$tmp/op_vadd" --kernel-name vadd --launch-count 1 \
	--flops n -- "$build/examples/opencl/vadd" 1024
run simulate_matmul op --simulate -o "$tmp/simulate_matmul" \
	--cache L1=32k:8:64,LL=2M:16:64 --kernel-name worker --trace-limit 100 \
	-- "$build/bench/mt_matmul" 16 2
run predict_vadd predict -o "$tmp/predict_vadd" --chip ascend910b -D N=8192 \
	"$src/examples/predict/vadd.kpp"
run sample_demo sample -o "$tmp/sample_demo" --trace-format none \
	-- "$build/examples/demo/demo"
# The memory tools exit 100 (--error-exitcode) when they find something,
# as they should here.
run_found() {
	"$@" || [ $? -eq 100 ]
}
for t in "memcheck_uaf memcheck examples/memory/uaf" \
	 "falseshare falseshare examples/threads/falseshare" \
	 "contention contention examples/threads/contention"; do
	set -- $t
	echo "make-samples.sh: $1: kscope $2" >&2
	run_found "$kscope" "$2" -o "$tmp/$1" -- "$build/$3" > "$tmp/$1.stdout" \
		2> "$tmp/$1.stderr" || { tail -20 "$tmp/$1.stderr" >&2; exit 1; }
	set -- "$1" "$tmp/$1"/*_*
	mv "$2" "$tmp/out/$1"
done

# The raw files are left out: kscope view does not read them.
rm -rf "$tmp/out"/*/raw "$tmp/out"/*/*.raw
chmod -R u+w "$tmp/out"
for d in "$tmp/out"/*; do
	rm -rf "$here/$(basename "$d")"
	cp -R "$d" "$here/"
done
du -sh "$here"/*/ >&2
