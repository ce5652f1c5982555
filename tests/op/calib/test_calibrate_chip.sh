#!/usr/bin/env bash
# Whole runs of `kscope calibrate --quick` for the host chip of kscope
# predict, with XDG_CACHE_HOME and XDG_DATA_HOME in a temporary directory:
#   1. the first run measures the ceilings and the host chip, says so, and
#      writes host.json (0600, in a 0700 directory) whose JSON parses and
#      is kscope calibrate's; kscope predict --chip host then predicts the
#      bundled vector add with it;
#   2. a second run prints both from the cache and changes nothing;
#   3. a damaged host.json is reported and only the chip is measured again;
#   4. a chip of another machine is measured again, with a note;
#   5. --no-chip neither measures nor writes a chip;
#   6. a chips directory others may write to is refused before measuring.
# No figure is compared with a fixed value.
#
#   usage: test_calibrate_chip.sh KSCOPE PYTHON3 SRCDIR
set -u
KSCOPE=$1 PY=$2 SRC=$3
tmp=$(mktemp -d /tmp/kscope-chip-test.XXXXXX)
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
data=$tmp/data
chip=$data/kscope/chips/host.json

fail() {
	echo "FAIL: $*" >&2
	echo "--- stdout:" >&2; cat "$tmp/out" >&2
	echo "--- stderr:" >&2; cat "$tmp/err" >&2
	exit 1
}

run() {
	env -i PATH="$PATH" HOME="$tmp/home" LANG=C XDG_CACHE_HOME="$tmp/cache" \
		XDG_DATA_HOME="$data" OCL_ICD_VENDORS="$tmp/no-vendors" \
		"$KSCOPE" "$@" >"$tmp/out" 2>"$tmp/err"
}
mkdir "$tmp/no-vendors"

check_chip() {
	"$PY" - "$chip" <<'EOF' || fail "host.json is wrong"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["kscope_chip"] == 1 and doc["name"] == "host", "name"
p = doc["provenance"]
assert p["source"] == "kscope calibrate" and p["date"] and p["quick"] is True, p
assert len(p["machine"]["key"]) == 16, p["machine"]
paths = {(x["from"], x["to"]): x for x in doc["paths"]}
for k in (("GM", "UB"), ("UB", "GM")):
    assert paths[k]["size"] == "footprint" and paths[k]["above"] == "last", paths[k]
    sizes = [e[0] for e in paths[k]["table"]]
    assert sizes == sorted(sizes) and all(e[1] > 0 for e in paths[k]["table"]), k
names = {i["name"] for i in doc["instructions"]}
want = {"vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vexp", "vln", "vabs",
        "vrelu", "vconv", "vreduce_sum", "vreduce_max", "mmad"}
assert want <= names, want - names
EOF
}

# 1. The first run measures both.
run calibrate --quick || fail "exit status $? on the first run"
head -n1 "$tmp/out" | grep -q '^kscope calibrate: ceilings of this machine (measured in' ||
	fail "no measurement headline"
grep -q '^host chip (kscope predict --chip host): measured in .* s, quick$' "$tmp/out" ||
	fail "no host chip line"
grep -q "^chip: $chip\$" "$tmp/out" || fail "the chip's path is not printed"
grep -q 'calibrating the host chip for kscope predict' "$tmp/err" || fail "no progress for the chip"
[[ -f $chip && $(stat -c %a "$chip") == 600 && $(stat -c %a "$data/kscope/chips") == 700 ]] ||
	fail "modes of $chip and its directory"
[[ $(ls -A "$data/kscope/chips" | wc -l) == 1 ]] || fail "temporary files left"
check_chip
run predict --chip host -o "$tmp/run" "$SRC/examples/predict/vadd.kpp" ||
	fail "kscope predict --chip host failed"
grep -q '^predicted time: .* cycles at .* GHz on host' "$tmp/out" || fail "no predicted time"

# 2. Cached: nothing measured, nothing changed.
cp "$chip" "$tmp/before"
run calibrate --quick || fail "exit status $? on the cached run"
grep -q '^host chip (kscope predict --chip host): cached (measured ' "$tmp/out" ||
	fail "the chip is not reported as cached"
! grep -q calibrating "$tmp/err" || fail "the cached run measured"
cmp -s "$chip" "$tmp/before" || fail "the cached run changed host.json"

# 3. A damaged chip: reported, and only the chip is measured again.
printf '{"kscope_chip": 1,\n' >"$chip"
run calibrate --quick || fail "exit status $? with a damaged chip"
grep -q "host chip '$chip' is damaged: invalid JSON at line .*; measuring it again to replace it" \
	"$tmp/err" || fail "the damage was not reported"
head -n1 "$tmp/out" | grep -q '^kscope calibrate: cached ceilings' || fail "the ceilings were measured"
grep -q '^host chip (kscope predict --chip host): measured in' "$tmp/out" || fail "no chip measured"
check_chip

# 4. Another machine's chip.
"$PY" -c '
import json, sys
d = json.load(open(sys.argv[1])); d["provenance"]["machine"]["key"] = "0123456789abcdef"
json.dump(d, open(sys.argv[1], "w"))' "$chip"
run calibrate --quick || fail "exit status $? with another machine's chip"
grep -q "host chip '$chip' was measured on another machine (key 0123456789abcdef; " "$tmp/err" ||
	fail "no note on the other machine"
grep -q '^host chip (kscope predict --chip host): measured in' "$tmp/out" || fail "not measured again"
check_chip

# 5. --no-chip.
rm "$chip"
run calibrate --quick --no-chip || fail "exit status $? with --no-chip"
[[ ! -e $chip ]] || fail "--no-chip wrote a chip"
! grep -q '^host chip' "$tmp/out" || fail "--no-chip printed a chip"

# 6. An unsafe chips directory stops kscope before it measures.
chmod 777 "$data/kscope/chips"
run calibrate --quick
status=$?
[[ $status == 1 ]] || fail "exit status $status with an unsafe chips directory, expected 1"
grep -q "'$data/kscope/chips' is writable by other users" "$tmp/err" || fail "not reported"
! grep -q calibrating "$tmp/err" || fail "it measured before refusing"
[[ ! -s $tmp/out ]] || fail "it printed results"
echo "ok: calibrate's host chip"
