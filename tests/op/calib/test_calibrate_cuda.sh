#!/usr/bin/env bash
# `kscope calibrate --quick --no-chip` and CUDA, on a machine without a
# GPU (a machine with one: see docs/calibrate.md, "CUDA"):
#   1. without libcuda.so.1, a one-line note says CUDA was not measured and
#      why, the table says so, the file has "cuda": null, exit 0;
#   2. with --no-cuda, no such note (only the --no-cuda one);
#   3. with the CUDA toolkit's stub library found as libcuda.so.1 (a link
#      in a directory on LD_LIBRARY_PATH), the note names the stub, exit 0
#      (skipped where no stub is installed);
#   4. where no NVIDIA driver is loaded, the file's machine has no
#      "cuda_devices" (its key is the one of before CUDA).
# Where a real driver answers, only what holds with a GPU is checked.
#
#   usage: test_calibrate_cuda.sh KSCOPE PYTHON3
set -u
KSCOPE=$1 PY=$2
tmp=$(mktemp -d /tmp/kscope-calib-cuda-test.XXXXXX)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cache=$tmp/cache

fail() {
	echo "FAIL: $*" >&2
	echo "--- stdout:" >&2; cat "$tmp/out" >&2
	echo "--- stderr:" >&2; cat "$tmp/err" >&2
	exit 1
}

extra_env=()
calibrate() {
	env -i PATH="$PATH" HOME="$tmp/home" LANG=C XDG_CACHE_HOME="$cache" \
		"${extra_env[@]}" "$KSCOPE" calibrate --quick --no-chip --no-opencl --force \
		"$@" >"$tmp/out" 2>"$tmp/err"
}

# $1: the file; $2: "null" when "cuda" must be null.
check_cuda() {
	"$PY" - "$1" "$2" <<'PYEOF' || fail "the calibration file is wrong: $1"
import json, sys
path, want = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
if want == "null":
    if doc.get("cuda", "absent") is not None:
        sys.exit(f"{path}: cuda is {doc.get('cuda', 'absent')!r}, not null")
    if any(c["name"].startswith("CUDA ") for c in doc["compute"]):
        sys.exit(f"{path}: a CUDA ceiling without a cuda object")
else:
    cu = doc["cuda"]
    for k in ("bytes_per_s", "fp32_flops_per_s", "fp16_flops_per_s"):
        if not cu[k] > 0:
            sys.exit(f"{path}: cuda.{k} {cu[k]!r}")
    if not any(c["name"] == f"CUDA FP32 FMA ({cu['device']})" for c in doc["compute"]):
        sys.exit(f"{path}: no CUDA FP32 FMA ceiling")
if any("CUDA" in m["name"] for m in doc["memory"]):
    sys.exit(f"{path}: a CUDA ceiling in the CPU's memory list")
PYEOF
}

# 1. Without libcuda.so.1 (or with a real driver, whatever it says).
calibrate || fail "exit status $? without --no-cuda"
file=$(sed -n 's/^file: //p' "$tmp/out")
[[ -f "$file" ]] || fail "no file"
if grep -q '^CUDA: not measured$' "$tmp/out"; then
	grep -q '^kscope: info: CUDA: not measured: ' "$tmp/err" ||
		fail "no note saying why CUDA was not measured"
	[[ $(grep -c 'CUDA: not measured: ' "$tmp/err") == 1 ]] || fail "more than one CUDA note"
	check_cuda "$file" null
	if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		grep -q 'CUDA: not measured: no NVIDIA driver: cannot load libcuda.so.1' "$tmp/err" ||
			fail "the note does not say that libcuda.so.1 is missing"
	fi
else
	grep -q '^CUDA: .* GFLOP/s FP32, .* FP16.*, .* GB/s read$' "$tmp/out" || fail "no CUDA line"
	check_cuda "$file" measured
fi
if [[ ! -d /proc/driver/nvidia/gpus ]]; then
	"$PY" -c 'import json,sys; sys.exit("cuda_devices" in json.load(open(sys.argv[1]))["machine"])' \
		"$file" || fail "cuda_devices in the file of a machine without an NVIDIA driver"
fi

# 2. --no-cuda: only its own note.
calibrate --no-cuda || fail "exit status $? with --no-cuda"
grep -q 'CUDA not measured (--no-cuda)' "$tmp/err" || fail "no --no-cuda note"
! grep -q 'CUDA: not measured: ' "$tmp/err" || fail "a CUDA note with --no-cuda"
! grep -q 'calibrating the CUDA device' "$tmp/err" || fail "CUDA measured with --no-cuda"
grep -q '^CUDA: not measured$' "$tmp/out" || fail "the table does not say CUDA is missing"
check_cuda "$file" null

# 3. The toolkit's stub as libcuda.so.1.
stub=$(ls /usr/local/cuda*/lib64/stubs/libcuda.so /usr/local/cuda*/targets/*/lib/stubs/libcuda.so \
	2>/dev/null | head -n1)
if [[ -n "$stub" ]]; then
	mkdir "$tmp/stub"
	ln -s "$stub" "$tmp/stub/libcuda.so.1"
	extra_env=(LD_LIBRARY_PATH="$tmp/stub")
	calibrate || fail "exit status $? with the stub"
	extra_env=()
	grep -q "^kscope: info: CUDA: not measured: libcuda.so.1 is the CUDA toolkit's stub library (.*stubs/libcuda.so), not an NVIDIA driver\$" \
		"$tmp/err" || fail "the note does not name the stub"
	grep -q '^CUDA: not measured$' "$tmp/out" || fail "the table does not say CUDA is missing"
	check_cuda "$file" null
else
	echo "no CUDA stub library installed: scenario 3 skipped"
fi
echo "ok: calibrate_cuda"
