#!/usr/bin/env bash
# How fast kscope view opens a large trace and answers the timeline's
# requests, measured in one run on generated data.
#
#   usage: bench/view.sh [-n REQUESTS] [-e EVENTS] [-b MB]
#          (BUILD=dir overrides the build directory, default build/)
#
# (a) Import.  bench/view/gen_trace.py writes a Trace Event Format trace
#     of EVENTS events (default 1,000,000, ~150 MB: 4 processes x 4
#     threads, slices nested 6 deep, args on every slice, a flow every 50
#     slices); `kscope view TRACE --port 0` is timed from its start to the
#     URL line it prints once the import is done.
# (b) Latency.  Over one HTTP keep-alive connection (bench/view/http_bench.py,
#     Python's http.client): REQUESTS (default 500) unit/threads requests
#     as the baseline (a trivial answer: the client's and the server's
#     fixed cost per round trip), then REQUESTS unit/threadTraces requests
#     on random threads at random places and zoom levels (log-uniform from
#     the whole trace at 1500 px wide to a window ~1000 slices wide).
#     Printed: p50, p95 and max in ms, the p95 over the baseline's p95,
#     and the p95 against the target, 100 ms, with PASS or MISS.
# (c) The same requests in-process (bench/view/tl_query.c built from the
#     timeline's sources with cc, no HTTP), to separate the model and JSON
#     cost from the server's; and the load's peak memory.
# (d) A visualize_data.bin of MB megabytes (default 100) holding one 0x02
#     (trace) block of the same kind of events: the import time, timed as
#     in (a).
# Exit status: 0 if the target was met, 1 if not or if a step failed,
# 2 for a usage error.
set -uo pipefail

usage() {
	echo "usage: bench/view.sh [-n REQUESTS] [-e EVENTS] [-b MB]  (BUILD=dir: build directory)" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
KSCOPE=$BUILD/kscope
REQUESTS=500
EVENTS=1000000
MB=100
while (($#)); do
	case $1 in
	-n) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; REQUESTS=$2; shift ;;
	-e) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; EVENTS=$2; shift ;;
	-b) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; MB=$2; shift ;;
	*) usage ;;
	esac
	shift
done
[[ -x $KSCOPE ]] || { echo "bench/view.sh: no $KSCOPE; build kscope first (make)" >&2; exit 1; }

TMP=$(mktemp -d /tmp/kscope-bench-view.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
status=0

echo "== generating $EVENTS events and a $MB MB container"
python3 "$ROOT/bench/view/gen_trace.py" "$TMP/trace.json" "$EVENTS" \
	--bin "$TMP/visualize_data.bin" --bin-mb "$MB" || exit 1

echo "== (a) import, (b) unit/threadTraces over HTTP, (d) container import"
python3 "$ROOT/bench/view/http_bench.py" "$KSCOPE" "$TMP/trace.json" "$REQUESTS" \
	"$TMP/visualize_data.bin" || status=1

echo "== (c) in-process"
CC=${CC:-cc}
if $CC -O2 -std=gnu11 -D_GNU_SOURCE -I"$ROOT/src/view" -I"$ROOT/src/common" \
	"$ROOT/bench/view/tl_query.c" "$ROOT/src/view/view_timeline.c" \
	"$ROOT/src/view/view_trace.c" "$ROOT/src/view/view_api.c" \
	"$ROOT/src/view/view_api_timeline.c" "$ROOT/src/common/err.c" \
	"$ROOT/src/common/utf8.c" \
	-ljansson -lm -o "$TMP/tl_query" 2>"$TMP/cc.log"; then
	"$TMP/tl_query" "$TMP/trace.json" "$REQUESTS" || status=1
else
	echo "(skipped: $CC could not build bench/view/tl_query.c:" \
		"$(head -c 300 "$TMP/cc.log"))"
fi
exit $status
