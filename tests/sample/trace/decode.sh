#!/bin/bash
# Checks the Perfetto trace writer with a decoder that owes nothing to
# kscope: protoc.  The unit test binary writes the traces of its synthetic
# profile (test_trace.c, build_profile) into a scratch directory; then
#   1. `protoc --decode_raw` must accept the file as protobuf and see the
#      expected number of top-level packets (field 1 of Trace);
#   2. `protoc --decode` with the schema below must name every field we
#      write: a field number the schema does not declare, or a wire type
#      that differs from the declared type, would show up as a bare number;
#   3. the decoded text must hold the expected descriptors, interned names,
#      annotations and counter values, correct sequence flags, and per
#      track begin/end pairs that balance with time never going back.
# Debian ships no Perfetto .proto files, so the schema is
# perfetto_subset.proto beside this script: the subset of Perfetto's
# trace protos that kscope writes, with the upstream field numbers and
# types.
#
# Usage: decode.sh TEST_SAMPLE_TRACE_BINARY.  Exits 77 (skipped) without
# protoc.
set -euo pipefail

test_bin=$1
fail() { echo "decode.sh: FAIL: $*" >&2; exit 1; }
command -v protoc >/dev/null || { echo "decode.sh: protoc not found, skipped"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run=$("$test_bin" --write "$tmp")
trace=$run/trace.perfetto-trace
[ -s "$trace" ] || fail "no trace written at $trace"

# 1. Raw decoding.
protoc --decode_raw <"$trace" >"$tmp/raw.txt" || fail "protoc --decode_raw rejects the trace"
n=$(grep -c '^1 {' "$tmp/raw.txt" || true)
[ "$n" = 50 ] || fail "protoc --decode_raw sees $n packets, expected 50"

# 2. Decoding with the schema.
cp "$(dirname "$0")/perfetto_subset.proto" "$tmp/perfetto_subset.proto"
(cd "$tmp" && protoc -I. --decode=perfetto.protos.Trace perfetto_subset.proto) \
	<"$trace" >"$tmp/dec.txt" || fail "protoc --decode rejects the trace"
if grep -nE '^ *[0-9]+( \{|:)' "$tmp/dec.txt" >&2; then
	fail "fields above are not in the schema (wrong number or wire type)"
fi

# 3. Content.
expect() {  # expect COUNT PATTERN: grep -c of the fixed string
	local got
	got=$(grep -cF -- "$2" "$tmp/dec.txt" || true)
	[ "$got" = "$1" ] || fail "'$2' appears $got times, expected $1"
}
expect 2 'process {'
expect 1 'process_name: "./app --x [rank 0]"'
expect 1 'process_name: "./app \"q\" [rank 1]"'
expect 3 'thread {'
expect 2 'thread_name: "main"'
expect 1 'tid: 101'
expect 3 'counter {'
expect 2 'name: "CPU %"'
expect 1 'name: "RSS"'
expect 1 'unit: UNIT_SIZE_BYTES'
expect 1 'name: "ranges"'
expect 1 'name: "overlapping slices 1"'
expect 2 'name: "samples"'
expect 1 'name: "MPI_Send"'
expect 1 'name: "checkpoint"'
expect 2 'name: "compute"'        # interned once on each of two sequences
expect 2 'name: "bytes"'          # annotation names, likewise
expect 2 'uint_value: 1024'
expect 1 'double_counter_value: 99.75'
expect 1 'double_counter_value: 2097152'
# MPI ranks in order; the samples with their stacks: one PerfSample each,
# the two without a call path without a callstack; on t0's sequence
# main > compute is interned once, and again on t2's.
expect 1 'sibling_order_rank: 0'
expect 1 'sibling_order_rank: 1'
expect 5 'perf_sample {'
expect 3 'callstack_iid: 2'
expect 2 'callstacks {'
expect 4 'frames {'
expect 2 'str: "compute"'
expect 2 'str: "app"'
expect 2 'path_string_ids: '

awk '
function done_packet() {
	n++
	if (!(seq in seen)) {
		if (flags != 1) bad = "first packet of sequence " seq " has flags " flags
		seen[seq] = 1
	} else if (flags != 2) {
		bad = "packet " n " on sequence " seq " has flags " flags
	}
	if (type != "") {
		if (ts == "") bad = "event without timestamp in packet " n
		if (track in last && ts + 0 < last[track]) bad = "time goes back on track " track
		last[track] = ts + 0
	}
	if (type == "TYPE_SLICE_BEGIN") { depth[track]++; begins++ }
	if (type == "TYPE_SLICE_END") { ends++; if (--depth[track] < 0) bad = "end without begin on track " track }
	if (type == "TYPE_INSTANT") instants++
	if (type == "TYPE_COUNTER") counters++
}
/^packet \{/ { ts = ""; seq = ""; flags = ""; type = ""; track = ""; next }
/^  timestamp: /                  { ts = $2 }
/^  trusted_packet_sequence_id: / { seq = $2 }
/^  sequence_flags: /             { flags = $2 }
/^    type: /                     { type = $2 }
/^    track_uuid: /               { track = $2 }
/^\}/                             { done_packet() }
END {
	for (t in depth) if (depth[t] != 0) bad = "track " t " has " depth[t] " unclosed slices"
	if (bad != "") { print "bad: " bad; exit 1 }
	printf "packets %d begins %d ends %d instants %d counters %d\n", n, begins, ends, instants, counters
}' "$tmp/dec.txt" >"$tmp/summary.txt" || fail "$(cat "$tmp/summary.txt")"
want="packets 50 begins 11 ends 11 instants 6 counters 5"
[ "$(cat "$tmp/summary.txt")" = "$want" ] || fail "got '$(cat "$tmp/summary.txt")', expected '$want'"
echo "decode.sh: ok: $want"
