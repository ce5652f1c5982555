#!/usr/bin/env bash
# Whole runs of `kscope calibrate --quick` with XDG_CACHE_HOME in a
# temporary directory:
#   1. a first run measures, prints the table and writes a private file
#      whose JSON parses and holds sane ceilings (L1 faster than DRAM, at
#      least one compute ceiling, the OpenCL entry consistent);
#   2. a second run prints the cached ceilings and leaves the file alone;
#   3. a damaged file is reported, measured again and replaced (here
#      without OpenCL, so "opencl" is null);
#   4. --threads different from the cached file's measures again;
#   5. a cache directory others may write to is refused before measuring;
#   6. without an OpenCL platform (an empty OCL_ICD_VENDORS), the machine
#      has another key and the file says "opencl": null, with a note.
# No figure is compared with a fixed value: only relations that hold on
# any machine.
#
#   usage: test_calibrate.sh KSCOPE PYTHON3
set -u
KSCOPE=$1 PY=$2
tmp=$(mktemp -d /tmp/kscope-calib-test.XXXXXX)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
cache=$tmp/cache

fail() {
	echo "FAIL: $*" >&2
	echo "--- stdout:" >&2; cat "$tmp/out" >&2
	echo "--- stderr:" >&2; cat "$tmp/err" >&2
	exit 1
}

# kscope with a clean environment, the temporary cache and $extra_env.
extra_env=()
calibrate() {
	env -i PATH="$PATH" HOME="$tmp/home" LANG=C XDG_CACHE_HOME="$cache" \
		"${extra_env[@]}" "$KSCOPE" calibrate "$@" >"$tmp/out" 2>"$tmp/err"
}

# Checks the calibration file $1 (python: the JSON and its relations);
# $2 is "opencl-null" when "opencl" must be null.
check_file() {
	"$PY" - "$1" "${2:-}" <<'EOF' || fail "the calibration file is wrong: $1"
import json, math, os, sys

path, want = sys.argv[1], sys.argv[2]
with open(path) as f:
    doc = json.load(f)

def check(cond, what):
    if not cond:
        sys.exit(f"{path}: {what}")

def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0

check(doc["kscope_calibration"] == 1, "version")
key = doc["machine"]["key"]
check(os.path.basename(path) == f"calibration-{key}.json", "key and file name")
check(len(key) == 16 and all(c in "0123456789abcdef" for c in key), "key")
check(doc["quick"] is True, "not marked quick")
mem = {m["name"]: m["bytes_per_s"] for m in doc["memory"]}
check(all(positive(v) for v in mem.values()), "memory rates")
check("L1" in mem and "DRAM" in mem, f"L1 or DRAM missing: {sorted(mem)}")
check(mem["L1"] > mem["DRAM"], f"L1 {mem['L1']} not faster than DRAM {mem['DRAM']}")
rates = [m["bytes_per_s"] for m in doc["memory"]]
check(rates == sorted(rates, reverse=True), "memory not fastest first")
check(all(m["working_set"] > 0 for m in doc["memory"]), "working sets")
check(len(doc["compute"]) >= 1, "no compute ceiling")
check(all(positive(c["flops_per_s"]) for c in doc["compute"]), "compute rates")
check(any(c["name"].startswith("CPU FP32") for c in doc["compute"]), "no CPU FP32")
check(any(c["name"].startswith("CPU FP64") for c in doc["compute"]), "no CPU FP64")
ocl = doc["opencl"]
if want == "opencl-null":
    check(ocl is None, "opencl is not null")
if ocl is not None:
    check(ocl["device"] != "", "opencl device")
    check(positive(ocl["bytes_per_s"]) and positive(ocl["flops_per_s"]), "opencl rates")
    check(any(c["name"].startswith("OpenCL FP32 (") and c["flops_per_s"] == ocl["flops_per_s"]
              for c in doc["compute"]), "no OpenCL compute ceiling")
else:
    check(not any(c["name"].startswith("OpenCL") for c in doc["compute"]),
          "an OpenCL ceiling without an opencl entry")
EOF
}

# 1. The first run measures.
calibrate --quick || fail "exit status $? on the first run"
head -n1 "$tmp/out" | grep -q '^kscope calibrate: ceilings of this machine (measured in .* s, quick sweep' ||
	fail "no measurement headline"
file=$(sed -n 's/^file: //p' "$tmp/out")
[[ "$file" == "$cache/kscope/calibration-"*.json && -f "$file" ]] || fail "no file at '$file'"
[[ $(stat -c %a "$file") == 600 && $(stat -c %a "$cache/kscope") == 700 &&
   $(stat -c %a "$cache") == 700 ]] || fail "modes of $file and its directories"
[[ $(ls -A "$cache/kscope" | wc -l) == 1 ]] || fail "temporary files left in $cache/kscope"
check_file "$file"
grep -q '^  L1 .* GB/s' "$tmp/out" && grep -q '^  DRAM .* GB/s' "$tmp/out" &&
	grep -q '^  CPU FP32 .* GFLOP/s' "$tmp/out" || fail "the table lacks L1, DRAM or CPU FP32"
grep -q 'calibrating memory bandwidth' "$tmp/err" || fail "no progress on stderr"
if ! grep -q '"opencl": null' "$file"; then
	grep -q '^OpenCL: .* GFLOP/s FP32, .* GB/s read$' "$tmp/out" || fail "no OpenCL line"
else
	grep -q 'OpenCL not measured: ' "$tmp/err" || fail "no note saying why OpenCL is missing"
fi

# 2. The second run answers from the cache.
cp "$file" "$tmp/before"
calibrate --quick || fail "exit status $? on the cached run"
head -n1 "$tmp/out" | grep -q '^kscope calibrate: cached ceilings of this machine' ||
	fail "the second run did not say it is cached"
grep -q "^file: $file\$" "$tmp/out" || fail "the cached run names another file"
cmp -s "$file" "$tmp/before" || fail "the cached run changed the file"
! grep -q 'calibrating' "$tmp/err" || fail "the cached run measured"

# 3. A damaged file is measured again and replaced.
chmod 600 "$file"
printf '{"kscope_calibration": 1,\n' >"$file"
calibrate --quick --no-opencl || fail "exit status $? with a damaged file"
grep -q "calibration file '$file' is damaged: invalid JSON at line .*; measuring again to replace it" \
	"$tmp/err" || fail "the damage was not reported"
grep -q 'OpenCL not measured (--no-opencl)' "$tmp/err" || fail "no --no-opencl note"
head -n1 "$tmp/out" | grep -q '^kscope calibrate: ceilings of this machine' || fail "no measurement"
check_file "$file" opencl-null
[[ $(ls -A "$cache/kscope" | wc -l) == 1 ]] || fail "temporary files left in $cache/kscope"

# 4. Another thread count than the cached file's measures again.
cached_threads=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"])' "$file")
if [[ "$cached_threads" != 1 ]]; then
	calibrate --quick --no-opencl --threads 1 || fail "exit status $? with --threads 1"
	grep -q "the cached calibration used $cached_threads threads; measuring with 1" "$tmp/err" ||
		fail "no note on the thread count"
	head -n1 "$tmp/out" | grep -q 'quick sweep, 1 thread)' || fail "not measured with 1 thread"
	[[ $("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"])' "$file") == 1 ]] ||
		fail "the file does not say 1 thread"
	check_file "$file" opencl-null
fi

# 5. A cache directory others may write to is refused, before measuring.
chmod 777 "$cache/kscope"
calibrate --quick --no-opencl --force
status=$?
[[ $status == 1 ]] || fail "exit status $status with an unsafe cache directory, expected 1"
grep -q "'$cache/kscope' is writable by other users (mode 0777)" "$tmp/err" ||
	fail "the unsafe directory was not reported"
! grep -q 'calibrating' "$tmp/err" || fail "it measured before refusing"
[[ ! -s "$tmp/out" ]] || fail "it printed results"
chmod 700 "$cache/kscope"

# 6. No OpenCL platform: another machine key, "opencl": null, a note.
mkdir "$tmp/no-vendors"
extra_env=(OCL_ICD_VENDORS="$tmp/no-vendors")
calibrate --quick || fail "exit status $? without OpenCL"
extra_env=()
nofile=$(sed -n 's/^file: //p' "$tmp/out")
[[ -f "$nofile" ]] || fail "no file without OpenCL"
# A machine with OpenCL devices has another key without them.
if [[ $("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["machine"]["opencl_devices"]))' \
	"$file") != 0 && "$nofile" == "$file" ]]; then
	fail "the same key with and without the OpenCL devices"
fi
grep -q '^kscope: info: OpenCL not measured: no OpenCL GPU or CPU device' "$tmp/err" ||
	fail "no note saying OpenCL is missing"
grep -q '^OpenCL: not measured$' "$tmp/out" || fail "the table does not say OpenCL is missing"
check_file "$nofile" opencl-null
echo "ok: calibrate"
