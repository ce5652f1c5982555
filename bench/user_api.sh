#!/usr/bin/env bash
# The cost of a kscope user-API call in a program run without kscope:
# the calls go to the no-op libkscope-user.so.  Builds bench/user_api_noop.c
# against BUILD_DIR/lib/libkscope-user.so and runs it: N iterations
# (default 10^8) of an empty loop and of each kind of call, printing
# ns per call, the time beyond the empty loop, and the ratio to it.
#
#   usage: bench/user_api.sh [BUILD_DIR] [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath "${1:-$root/build}")
N=${2:-100000000}
lib=$BUILD/lib/libkscope-user.so
[[ -f $lib ]] || { echo "bench: $lib is missing; build first (make)" >&2; exit 1; }
work=$(mktemp -d /tmp/kscope-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
${CC:-cc} -O2 -I"$root/include" "$root/bench/user_api_noop.c" -o "$work/user_api_noop" \
	-L"$BUILD/lib" -lkscope-user -Wl,-rpath,"$BUILD/lib"
# Without kscope: LD_PRELOAD must not bring libkscope.so in.
env -u LD_PRELOAD "$work/user_api_noop" "$N"
