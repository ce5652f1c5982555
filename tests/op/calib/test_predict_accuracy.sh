#!/usr/bin/env bash
# A smoke test of bench/predict_accuracy.sh: its whole machinery (the
# built kernels, kscope predict on the bundled models, the roofline from a
# calibration file, the table, MAPE and Kendall tau) at one tiny size per
# kernel, with a made-up chip and calibration written here, so that no
# calibration is run.  Nothing about accuracy or time is checked: only
# that every point is measured and predicted and the report is complete.
# Then the bundled models on the shipped ascend910b chip.
#
#   usage: test_predict_accuracy.sh SRCDIR BUILDDIR
set -u
SRC=$1 BUILD=$2
tmp=$(mktemp -d /tmp/kscope-acc-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "FAIL: $*" >&2
	echo "--- stdout:" >&2; cat "$tmp/out" >&2
	echo "--- stderr:" >&2; cat "$tmp/err" >&2
	exit 1
}

# A chip shaped like the host chip, with round figures.
cat >"$tmp/chip.json" <<'EOF'
{
  "kscope_chip": 1, "name": "smoke", "description": "a test chip",
  "provenance": { "source": "tests/op/calib/test_predict_accuracy.sh", "date": "2026-11-22" },
  "clock_hz": 2e9,
  "spaces": [ { "name": "GM", "ready": true }, { "name": "UB", "bytes": 32768 } ],
  "pipes": [ "MEM", "VECTOR", "SCALAR" ],
  "paths": [
    { "from": "GM", "to": "UB", "pipe": "MEM", "size": "footprint", "above": "last",
      "table": [ [4096, 64], [1048576, 16], [67108864, 4] ] },
    { "from": "UB", "to": "GM", "pipe": "MEM", "size": "footprint", "above": "last",
      "table": [ [4096, 32], [1048576, 8], [67108864, 2] ] }
  ],
  "instructions": [
    { "name": "vadd", "pipe": "VECTOR", "spaces": ["UB"], "tables": { "fp32": [ [64, 0.5], [4096, 1] ] } },
    { "name": "vmul", "pipe": "VECTOR", "spaces": ["UB"], "tables": { "fp32": [ [64, 0.5], [4096, 1] ] } },
    { "name": "vmuls", "pipe": "VECTOR", "spaces": ["UB"], "tables": { "fp32": [ [64, 0.5], [4096, 1] ] } },
    { "name": "vreduce_sum", "pipe": "SCALAR", "spaces": ["UB"], "tables": { "fp32": [ [64, 0.25] ] } },
    { "name": "mmad", "pipe": "VECTOR", "spaces": ["UB", "UB", "UB"], "tables": { "fp32": [ [512, 0.5], [262144, 1] ] } }
  ],
  "scalar": { "pipe": "SCALAR", "cycles_per_op": 1 }
}
EOF
# A calibration file as kscope calibrate writes it.
cat >"$tmp/calib.json" <<'EOF'
{
  "kscope_calibration": 1, "created": "2026-11-22T00:00:00Z", "quick": true, "threads": 2,
  "machine": { "key": "0123456789abcdef", "cpu": "test", "cpus": 2, "memory_bytes": 8589934592,
               "caches": [ { "level": 1, "type": "Data", "bytes": 32768, "shared_cpus": 1 },
                           { "level": 2, "type": "Unified", "bytes": 1048576, "shared_cpus": 1 },
                           { "level": 3, "type": "Unified", "bytes": 8388608, "shared_cpus": 2 } ] },
  "memory": [ { "name": "L1", "bytes_per_s": 4e11 }, { "name": "L2", "bytes_per_s": 2e11 },
              { "name": "L3", "bytes_per_s": 5e10 }, { "name": "DRAM", "bytes_per_s": 2e10 } ],
  "compute": [ { "name": "CPU FP32 FMA", "flops_per_s": 1e11 } ],
  "opencl": null
}
EOF

env -i PATH="$PATH" HOME="$tmp" LANG=C \
	bash "$SRC/bench/predict_accuracy.sh" "$BUILD" --chip "$tmp/chip.json" \
	--calib "$tmp/calib.json" --tiny --runs 1 --csv "$tmp/points.csv" \
	>"$tmp/out" 2>"$tmp/err"
status=$?
[[ $status == 0 ]] || fail "exit status $status"
grep -q "^kscope predict accuracy: chip $tmp/chip.json, 1 run(s) per point (median), 4 points$" \
	"$tmp/out" || fail "no headline"
grep -q '^kernel .* measured .* predicted .* error .* roofline .* error  level$' "$tmp/out" ||
	fail "no table header"
for k in vadd scale dot matmul; do
	grep -Eq "^$k +N=[0-9]+.* [0-9.]+ (ns|us|ms|s) +[0-9.]+ (ns|us|ms|s) +[-+][0-9.]+% " "$tmp/out" ||
		fail "no row for $k"
	grep -Eq "^$k +1 +[0-9.]+% +[-0-9.]+ +[0-9.]+% +[-0-9.]+$" "$tmp/out" ||
		fail "no summary for $k"
done
grep -Eq '^all +4 +[0-9.]+% +[-0-9.]+ +[0-9.]+% +[-0-9.]+$' "$tmp/out" || fail "no overall summary"
grep -Eq '^target: MAPE <= 20% for kscope predict: (met|not met) \([0-9.]+%\)$' "$tmp/out" ||
	fail "no target line"
[[ $(wc -l <"$tmp/points.csv") == 5 ]] || fail "the CSV does not hold 4 points"
head -n1 "$tmp/points.csv" | grep -q '^kernel,n,tile,footprint,measured_ns,predicted_ns,' ||
	fail "the CSV header"
# A usage error is one.
bash "$SRC/bench/predict_accuracy.sh" --runs x >/dev/null 2>&1
[[ $? == 2 ]] || fail "a bad --runs is not a usage error"
# The bundled models also run on the shipped Ascend-style chip, which
# loads without a warning: vadd, scale and dot through UB, the cube's
# matrix multiply through L1 and L0A/L0B/L0C.
for m in vadd scale dot matmul_cube; do
	env -i PATH="$PATH" HOME="$tmp" LANG=C "$BUILD/kscope" predict --chip ascend910b \
		-o "$tmp/pred-$m" "$SRC/examples/predict/$m.kpp" >"$tmp/out" 2>"$tmp/err" ||
		fail "$m.kpp on ascend910b"
	grep -q '^predicted time: .* on ascend910b' "$tmp/out" || fail "$m.kpp: no predicted time"
	! grep -q 'warn' "$tmp/err" || fail "$m.kpp on ascend910b: a warning"
done
echo "ok: predict_accuracy.sh"
