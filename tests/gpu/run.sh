#!/bin/bash
# The GPU checks of kscope op's CUDA backend: the one script a
# session with an NVIDIA GPU machine runs.  Not part of make check.
#
#   tests/gpu/run.sh [BUILD]       (default build-cuda), from the repo root
#
# Takes a kscope build made elsewhere (BUILD/kscope, BUILD/lib, and
# BUILD/gpu-deps from tests/gpu/pack.sh), builds examples/cuda with this
# machine's nvcc, and writes everything into $OUT (default ./gpu-out):
#   env.txt        GPU, driver, nvcc, ncu, PyTorch
#   results.tsv    per example: native and kscope exit status, whether the
#                  checksum lines are identical, kernels collected
#   kernels.tsv    per collected kernel: kscope's median replay time, its
#                  measure status, ncu's gpu__time_duration for the same
#                  kernel and launch, the ratio
#   filter.txt     kernels matched by --kernel-name vs ncu's --kernel-name
#   torch.txt      the PyTorch loop: native, under kscope with no match
#   logs.tar.gz    every command's output and the raw run directories
# Exits 1 when a checksum under kscope differs from the native run (the
# one check that must hold from the first run); every other comparison is
# reported, not enforced, until the backend has run on a GPU once.
# Each step has a time limit; the whole script stays under 8 minutes.
set -u
B=${1:-build-cuda}
OUT=${OUT:-$PWD/gpu-out}
W=$(mktemp -d /tmp/ks_gpu.XXXXXX)
mkdir -p "$OUT" "$W/logs" "$W/ex"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
KSCOPE=$ROOT/$B/kscope
export LD_LIBRARY_PATH=$ROOT/$B/gpu-deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PATH=$PATH:/usr/local/cuda/bin
START=$(date +%s)
fail=0
log() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$OUT/progress.txt"; }

# --- the machine -------------------------------------------------------
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
	nvcc --version | tail -2
	ncu --version 2>&1 | tail -1
	python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
	"$KSCOPE" --version 2>&1
} > "$OUT/env.txt" 2>&1
log "env: $(head -2 "$OUT/env.txt" | tail -1)"

# --- the examples, built here ----------------------------------------
EXAMPLES="vadd matmul reduce structptr streams graph"
for e in $EXAMPLES; do
	timeout 120 nvcc -O2 -lineinfo -gencode arch=compute_90,code=sm_90 \
		-gencode arch=compute_90,code=compute_90 -o "$W/ex/$e" "$ROOT/examples/cuda/$e.cu" \
		> "$W/logs/nvcc_$e.txt" 2>&1 || { log "nvcc $e failed"; fail=1; }
done
log "examples built"

# --- native vs kscope op ---------------------------------------------
printf 'example\tnative_rc\tkscope_rc\tchecksums_equal\tcollected\n' > "$OUT/results.tsv"
for e in $EXAMPLES; do
	(cd "$W" && timeout 60 "ex/$e" > "logs/native_$e.out" 2> "logs/native_$e.err"); nrc=$?
	(cd "$W" && timeout 120 "$KSCOPE" op -o "$W/op_$e" --launch-count 5 --replay-count 10 \
		--warm-up 3 -- "ex/$e" > "logs/op_$e.out" 2> "logs/op_$e.err"); orc=$?
	same=no
	if grep checksum "$W/logs/native_$e.out" > "$W/n.txt" && grep checksum "$W/logs/op_$e.out" > "$W/o.txt" &&
		cmp -s "$W/n.txt" "$W/o.txt"; then same=yes; fi
	[ "$same" = yes ] && [ "$nrc" = "$orc" ] || fail=1
	ncoll=$(find "$W/op_$e" -name measure.json 2>/dev/null | wc -l)
	printf '%s\t%s\t%s\t%s\t%s\n' "$e" "$nrc" "$orc" "$same" "$ncoll" >> "$OUT/results.tsv"
	log "$e: native $nrc, kscope $orc, checksums equal: $same, collected $ncoll"
done

# --- side by side with ncu --------------------------------------------
# ncu: every launch of the same programs, fixed clocks off, caches
# flushed before each (kscope: --cache-flush on, its default).
for e in $EXAMPLES; do
	(cd "$W" && timeout 120 ncu --metrics gpu__time_duration.sum --clock-control none \
		--cache-control all --csv --launch-count 5 "ex/$e" > "logs/ncu_$e.csv" 2> "logs/ncu_$e.err")
done
log "ncu done"
python3 - "$W" "$OUT" $EXAMPLES <<'PY'
import csv, glob, json, os, statistics, sys
w, out, examples = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = []
for e in examples:
    ncu = {}
    try:
        lines = [l for l in open(f"{w}/logs/ncu_{e}.csv") if l.startswith('"')]
        for r in csv.DictReader(lines):
            if r.get("Metric Name") == "gpu__time_duration.sum":
                unit = r.get("Metric Unit", "nsecond")
                v = float(r["Metric Value"].replace(",", ""))
                v *= {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(unit, 1)
                ncu.setdefault(r["Kernel Name"].split("(")[0].split("<")[0].split()[-1], []).append(v)
    except OSError:
        pass
    for m in sorted(glob.glob(f"{w}/op_{e}/*/*/*/measure.json")):
        d = os.path.basename(os.path.dirname(m))
        name = d.rsplit("_", 1)[0]
        j = json.load(open(m))
        p = j.get("pass_ns") or []
        med = statistics.median(p) if p else None
        n = statistics.median(ncu[name]) if ncu.get(name) else None
        ratio = f"{med / n:.3f}" if med and n else "-"
        rows.append([e, d, j.get("status"), str(med), str(n), ratio, (j.get("error") or "")[:200]])
with open(f"{out}/kernels.tsv", "w") as f:
    f.write("example\tlaunch\tstatus\tkscope_median_ns\tncu_median_ns\tratio\terror\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
PY
log "kernels.tsv: $(($(wc -l < "$OUT/kernels.tsv") - 1)) rows"

# --- the same filter in both tools --------------------------------------
(cd "$W" && timeout 120 "$KSCOPE" op -o "$W/filt" --kernel-name mm --launch-count 10 -- ex/matmul 256 \
	> logs/filt.out 2> logs/filt.err)
(cd "$W" && timeout 120 ncu --kernel-name regex:'^(void )?mm' --metrics gpu__time_duration.sum --csv \
	ex/matmul 256 > logs/filt_ncu.csv 2> logs/filt_ncu.err)
{
	echo "kscope:"; find "$W/filt" -name measure.json | xargs -r -n1 dirname | xargs -r -n1 basename | sed 's/_[0-9]*$//' | sort
	echo "ncu:"; grep gpu__time_duration "$W/logs/filt_ncu.csv" | awk -F'","' '{print $5}' | sed 's/(.*//; s/<.*//; s/^void //' | sort
} > "$OUT/filter.txt"
log "filter: $(tr '\n' ' ' < "$OUT/filter.txt")"

# --- PyTorch: output and overhead with nothing matching ----------------
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	cat > "$W/torch_loop.py" <<'PY'
import sys, time, torch
torch.manual_seed(0)
a = torch.randn(1024, 1024, device="cuda"); x = torch.randn(8, 16, 64, 64, device="cuda")
conv = torch.nn.Conv2d(16, 16, 3, padding=1).cuda()
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(200):
    b = a @ a; y = conv(x)
torch.cuda.synchronize()
print("torch: checksum %.6e %.6e" % (b.double().sum().item(), y.double().sum().item()))
print("torch: seconds %.4f" % (time.perf_counter() - t), file=sys.stderr)
PY
	{
		for i in 1 2 3; do
			(cd "$W" && timeout 120 python3 torch_loop.py 2>&1)
			(cd "$W" && timeout 120 "$KSCOPE" op -o "$W/torch" --kernel-name nomatch_xyz -- python3 torch_loop.py 2>&1)
		done
		(cd "$W" && timeout 120 "$KSCOPE" op -o "$W/torch" --kernel-name '*gemm|*conv' --launch-count 3 -- python3 torch_loop.py 2>&1)
	} > "$OUT/torch.txt"
	log "torch done"
else
	echo "PyTorch with CUDA not available" > "$OUT/torch.txt"
fi

tar -czf "$OUT/logs.tar.gz" -C "$W" logs $(cd "$W" && ls -d op_* filt torch 2>/dev/null) 2>/dev/null
log "done, fail=$fail"
exit $fail
