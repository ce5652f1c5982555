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
# KS_GPU_TORCH=0 leaves out the PyTorch steps (about 100 s).
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
# Steps after the examples are skipped once the script has run this long,
# so that what was measured still comes back inside the call's limit.
DEADLINE=${KS_GPU_DEADLINE:-420}
late() { [ $(( $(date +%s) - START )) -gt "$DEADLINE" ] && { log "skipped (past ${DEADLINE}s): $*"; return 0; }; return 1; }

# --- the machine -------------------------------------------------------
{
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
	nvcc --version | tail -2
	ncu --version 2>&1 | tail -1
	python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' 2>&1
	"$KSCOPE" --version 2>&1
	echo "CUPTI:"; ls /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* /usr/local/cuda/lib64/libcupti.so* 2>&1
	ls /usr/local/cuda/lib64/libnvperf* 2>&1
	echo "NVML:"; ls /usr/lib/x86_64-linux-gnu/libnvidia-ml.so* /usr/local/nvidia/lib64/libnvidia-ml.so* 2>&1
	nvidia-smi -q -d CLOCK 2>&1 | head -40
} > "$OUT/env.txt" 2>&1
log "env: $(head -2 "$OUT/env.txt" | tail -1)"

# --- the examples, built here ----------------------------------------
EXAMPLES="vadd matmul reduce structptr streams graph ranges"
for e in $EXAMPLES; do
	timeout 150 nvcc -O2 -lineinfo -gencode arch=compute_90,code=sm_90 \
		-gencode arch=compute_90,code=compute_90 -o "$W/ex/$e" "$ROOT/examples/cuda/$e.cu" -ldl \
		> "$W/logs/nvcc_$e.txt" 2>&1 || { log "nvcc $e failed"; echo 1 > "$W/nvcc_failed"; } &
done
timeout 150 nvcc -O2 -lineinfo -gencode arch=compute_90,code=sm_90 -o "$W/ex/graph_cases" \
	"$ROOT/tests/gpu/graph_cases.cu" -ldl > "$W/logs/nvcc_graph_cases.txt" 2>&1 ||
	{ log "nvcc graph_cases failed"; echo 1 > "$W/nvcc_failed"; } &
wait
[ -e "$W/nvcc_failed" ] && fail=1
log "examples built"

# segv_bt.so (built here) prints the stack of a crash under kscope op.
gcc -shared -fPIC -o "$W/segv_bt.so" "$ROOT/tests/gpu/segv_bt.c" > "$W/logs/segv_bt.txt" 2>&1
SEGV=$W/segv_bt.so
[ -e "$SEGV" ] || SEGV=

# --- native vs kscope op ---------------------------------------------
printf 'example\tnative_rc\tkscope_rc\tchecksums_equal\tcollected\n' > "$OUT/results.tsv"
for e in $EXAMPLES; do
	(cd "$W" && timeout 60 "ex/$e" > "logs/native_$e.out" 2> "logs/native_$e.err"); nrc=$?
	(cd "$W" && LD_PRELOAD=$SEGV KSCOPE_OP_CUDA_HW=0 timeout 45 "$KSCOPE" op -o "$W/op_$e" --launch-count 5 --replay-count 10 \
		--warm-up 3 -- "ex/$e" > "logs/op_$e.out" 2> "logs/op_$e.err"); orc=$?
	same=no
	if grep checksum "$W/logs/native_$e.out" > "$W/n.txt" && grep checksum "$W/logs/op_$e.out" > "$W/o.txt" &&
		cmp -s "$W/n.txt" "$W/o.txt"; then same=yes; fi
	[ "$same" = yes ] || fail=1
	ncoll=$(find "$W/op_$e" -name measure.json 2>/dev/null | wc -l)
	printf '%s\t%s\t%s\t%s\t%s\n' "$e" "$nrc" "$orc" "$same" "$ncoll" >> "$OUT/results.tsv"
	log "$e: native $nrc, kscope $orc, checksums equal: $same, collected $ncoll"
done

# --- hardware counters (CUPTI), each example once more -----------------
for e in $EXAMPLES; do
	late "cupti $e" && continue
	(cd "$W" && LD_PRELOAD=$SEGV KSCOPE_OP_CUDA_HW=1 timeout 60 "$KSCOPE" op -o "$W/hw_$e" \
		--launch-count 5 --replay-count 10 --warm-up 3 -- "ex/$e" > "logs/hw_$e.out" 2> "logs/hw_$e.err")
	log "cupti $e: rc $?, $(grep -c segv_bt "$W/logs/hw_$e.err") crash(es)"
done

# --- application replay: the program's own launches, timed --------------
for e in vadd matmul; do
	late "application $e" && continue
	(cd "$W" && timeout 60 "$KSCOPE" op -o "$W/app_$e" --replay-mode application \
		--launch-count 2 --replay-count 3 -- "ex/$e" > "logs/app_$e.out" 2> "logs/app_$e.err"); arc=$?
	same=no
	grep checksum "$W/logs/native_$e.out" > "$W/n.txt" && grep checksum "$W/logs/app_$e.out" > "$W/o.txt" &&
		cmp -s "$W/n.txt" "$W/o.txt" && same=yes
	[ "$same" = yes ] || fail=1
	log "application $e: kscope $arc, checksums equal: $same, collected $(find "$W/app_$e" -name measure.json 2>/dev/null | wc -l)"
done

# --- --backup all: every live allocation backed up -------------------------
if ! late "backup all"; then
	(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 60 "$KSCOPE" op -o "$W/ball_structptr" --backup all \
		--launch-count 2 -- ex/structptr > logs/ball_structptr.out 2> logs/ball_structptr.err); brc=$?
	same=no
	grep checksum "$W/logs/native_structptr.out" > "$W/n.txt" &&
		grep checksum "$W/logs/ball_structptr.out" > "$W/o.txt" && cmp -s "$W/n.txt" "$W/o.txt" && same=yes
	[ "$same" = yes ] || fail=1
	log "backup all structptr: kscope $brc, checksums equal: $same, buffers: $(grep -ho '"backup_bytes": [0-9]*' "$W"/ball_structptr/*/*/*/measure.json | tr '\n' ' ') (args only: $(grep -ho '"backup_bytes": [0-9]*' "$W"/op_structptr/*/*/*/measure.json | tr '\n' ' '))"
fi

# --- NVTX ranges: range replay, and a filter ----------------------------
if ! late "nvtx ranges"; then
	(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 60 "$KSCOPE" op -o "$W/rng_ranges" --mstx on \
		--replay-mode range --launch-count 2 -- ex/ranges > logs/rng_ranges.out 2> logs/rng_ranges.err); grc=$?
	same=no
	grep checksum "$W/logs/native_ranges.out" > "$W/n.txt" &&
		grep checksum "$W/logs/rng_ranges.out" > "$W/o.txt" && cmp -s "$W/n.txt" "$W/o.txt" && same=yes
	[ "$same" = yes ] || fail=1
	log "range replay of NVTX ranges: kscope $grc, checksums equal: $same, collected: $(find "$W/rng_ranges" -name measure.json | xargs -r -n1 dirname | xargs -r -n1 basename | tr '\n' ' ')"
fi

# --- the process tree: a shell running two CUDA programs ------------------
if ! late "process tree"; then
	(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 60 "$KSCOPE" op -o "$W/tree_sh" --launch-count 8 \
		-- sh -c "ex/vadd; ex/matmul" > logs/tree_sh.out 2> logs/tree_sh.err); trc=$?
	(cd "$W" && sh -c "ex/vadd; ex/matmul" > logs/tree_native.out 2>&1)
	same=no
	grep checksum "$W/logs/tree_native.out" > "$W/n.txt" &&
		grep checksum "$W/logs/tree_sh.out" > "$W/o.txt" && cmp -s "$W/n.txt" "$W/o.txt" && same=yes
	[ "$same" = yes ] || fail=1
	log "process tree: kscope $trc, checksums equal: $same, pids: $(ls -d "$W"/tree_sh/*/[0-9]* 2>/dev/null | wc -l), collected $(find "$W/tree_sh" -name measure.json | wc -l)"
fi

# --- CUDA graphs: run node by node, or whole and said why -----------------
for c in child alloc update reupdate; do
	late "graph $c" && continue
	(cd "$W" && timeout 30 ex/graph_cases $c > "logs/gc_native_$c.out" 2>&1)
	(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 60 "$KSCOPE" op -o "$W/gc_$c" --launch-count 20 \
		--replay-count 3 -- ex/graph_cases $c > "logs/gc_$c.out" 2> "logs/gc_$c.err"); grc=$?
	same=no
	grep checksum "$W/logs/gc_native_$c.out" > "$W/n.txt" && grep checksum "$W/logs/gc_$c.out" > "$W/o.txt" &&
		cmp -s "$W/n.txt" "$W/o.txt" && same=yes
	[ "$same" = yes ] || fail=1
	log "graph $c: kscope $grc, checksums equal: $same, collected: $(find "$W/gc_$c" -name measure.json | xargs -r -n1 dirname | xargs -r -n1 basename | tr '\n' ' ')warning: $(grep -o 'CUDA graph launch.*' "$W/logs/gc_$c.err" | head -1)"
done

# --- other frameworks: CuPy (NVRTC, cuBLAS), Triton (its own launcher), JAX (XLA)
for fw in cupy triton jax; do
	late "$fw" && continue
	(cd "$W" && timeout 90 python3 "$ROOT/tests/gpu/frameworks/${fw}_prog.py" > "logs/fw_native_$fw.out" 2>&1); nrc=$?
	(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 120 "$KSCOPE" op -o "$W/fw_$fw" --launch-count 6 --replay-count 3 \
		-- python3 "$ROOT/tests/gpu/frameworks/${fw}_prog.py" > "logs/fw_$fw.out" 2> "logs/fw_$fw.err"); frc=$?
	same=no
	grep checksum "$W/logs/fw_native_$fw.out" > "$W/n.txt" && grep checksum "$W/logs/fw_$fw.out" > "$W/o.txt" &&
		cmp -s "$W/n.txt" "$W/o.txt" && same=yes
	[ "$same" = yes ] || [ "$nrc" != 0 ] || fail=1
	log "$fw: native $nrc, kscope $frc, checksums equal: $same, collected: $(find "$W/fw_$fw" -name measure.json | xargs -r -n1 dirname | xargs -r -n1 basename | sort -t_ -k2 -n | tr '\n' ' ')$(grep -ho 'warn: .*' "$W/logs/fw_$fw.err" | head -2 | tr '\n' ' ')"
done

# --- what the deliverables say of a CUDA launch ------------------------------
if ! late deliverables; then
	f=$(find "$W"/hw_matmul -name OpBasicInfo.csv | sort | head -1)
	[ -n "$f" ] && python3 - "$f" >> "$OUT/progress.txt" <<'PY'
import csv, sys
r = next(csv.DictReader(open(sys.argv[1])))
print("deliverables (%s): " % sys.argv[1].split("/")[-2] + ", ".join(
    "%s=%s" % (k, r.get(k)) for k in ("clock_mhz", "max_clock_mhz", "memory_clock_mhz",
                                       "median_us", "gpu_time_us", "achieved_occupancy_pct",
                                       "bytes_basis")))
PY
	grep -h -A3 "median us" "$W/logs/hw_matmul.err" | head -4 >> "$OUT/progress.txt"
fi

# --- side by side with ncu --------------------------------------------
# ncu: every launch of the same programs, fixed clocks off, caches
# flushed before each (kscope: --cache-flush on, its default).
for e in $EXAMPLES; do
	late "ncu $e" && continue
	(cd "$W" && timeout 60 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
		--clock-control none --cache-control all --csv --launch-count 5 "ex/$e" \
		> "logs/ncu_$e.csv" 2> "logs/ncu_$e.err")
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
            metric = r.get("Metric Name")
            unit = r.get("Metric Unit", "")
            try:
                v = float(r["Metric Value"].replace(",", ""))
            except ValueError:
                continue
            v *= {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9,
                  "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(unit, 1)
            name = r["Kernel Name"].split("(")[0].split("<")[0].split()[-1]
            key = {"gpu__time_duration.sum": "t", "dram__bytes_read.sum": "r",
                   "dram__bytes_write.sum": "w",
                   "sm__warps_active.avg.pct_of_peak_sustained_active": "o"}.get(metric)
            if key:
                ncu.setdefault((name, key), []).append(v)
    except OSError:
        pass
    for m in sorted(glob.glob(f"{w}/op_{e}/*/*/*/measure.json")) + \
            sorted(glob.glob(f"{w}/hw_{e}/*/*/*/measure.json")):
        d = os.path.basename(os.path.dirname(m))
        name = d.rsplit("_", 1)[0]
        j = json.load(open(m))
        p = j.get("pass_ns") or []
        med = statistics.median(p) if p else None
        med_of = lambda k: statistics.median(ncu[(name, k)]) if ncu.get((name, k)) else None
        n = med_of("t")
        ratio = f"{med / n:.3f}" if med and n else "-"
        hw = j.get("hardware") or {}
        hm = hw.get("metrics") or {}
        kr, kw = hm.get("dram__bytes_read.sum"), hm.get("dram__bytes_write.sum")
        nr, nw = med_of("r"), med_of("w")
        rr = f"{kr / nr:.3f}" if kr is not None and nr else "-"
        try:
            ctx = json.load(open(os.path.join(os.path.dirname(m), "context.json")))
            ovh = (ctx.get("timing") or {}).get("event_overhead_ns")
        except (OSError, ValueError):
            ovh = None
        rows.append([e + ("+hw" if "/hw_" in m else ""), d, str(j.get("status")), str(med), str(n), ratio, str(ovh),
                     str(nr), str(nw), str(kr), str(kw), rr,
                     str(hm.get("sm__warps_active.avg.pct_of_peak_sustained_active")),
                     str(med_of("o")),
                     str(hm.get("gpu__time_duration.sum")),
                     (j.get("error") or hw.get("reason") or "")[:200]])
with open(f"{out}/kernels.tsv", "w") as f:
    f.write("example\tlaunch\tstatus\tkscope_median_ns\tncu_median_ns\tratio\t"
            "event_overhead_ns\tncu_dram_read\tncu_dram_write\tcupti_dram_read\t"
            "cupti_dram_write\tread_ratio\tcupti_occupancy_pct\tncu_occupancy_pct\tcupti_time_ns\t"
            "error\n")
    for r in rows:
        f.write("\t".join(r) + "\n")
PY
log "kernels.tsv: $(($(wc -l < "$OUT/kernels.tsv") - 1)) rows"

# --- kscope calibrate on the GPU, and the roofline it gives ----------------
if ! late calibrate; then
	mkdir -p "$W/cache"
	(cd "$W" && XDG_CACHE_HOME=$W/cache timeout 90 "$KSCOPE" calibrate --quick --no-chip \
		> logs/calibrate.out 2> logs/calibrate.err); crc=$?
	cp "$W"/cache/kscope/calibration-*.json "$W/logs/" 2>/dev/null
	(cd "$W" && XDG_CACHE_HOME=$W/cache KSCOPE_OP_CUDA_HW=1 timeout 60 "$KSCOPE" op -o "$W/cal_matmul" \
		--launch-count 2 --flops '2*gx*gy*gx' -- ex/matmul > logs/cal_matmul.out 2> logs/cal_matmul.err)
	cp "$W"/cal_matmul/*/summary.csv "$W/logs/cal_matmul_summary.csv" 2>/dev/null
	log "calibrate: rc $crc; $(grep -h '^CUDA' "$W/logs/calibrate.out" "$W/logs/calibrate.err" | head -1)"
fi

# --- the same filter in both tools --------------------------------------
late filter || (cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 60 "$KSCOPE" op -o "$W/filt" --kernel-name mm --launch-count 10 -- ex/matmul 256 \
	> logs/filt.out 2> logs/filt.err)
late "filter ncu" || (cd "$W" && timeout 60 ncu --kernel-name regex:'^(void )?mm' --metrics gpu__time_duration.sum --csv \
	ex/matmul 256 > logs/filt_ncu.csv 2> logs/filt_ncu.err)
{
	echo "kscope:"; find "$W/filt" -name measure.json | xargs -r -n1 dirname | xargs -r -n1 basename | sed 's/_[0-9]*$//' | sort
	echo "ncu:"; grep gpu__time_duration "$W/logs/filt_ncu.csv" | awk -F'","' '{print $5}' | sed 's/(.*//; s/<.*//; s/^void //' | sort
} > "$OUT/filter.txt"
log "filter: $(tr '\n' ' ' < "$OUT/filter.txt")"

# --- PyTorch: output and overhead with nothing matching ----------------
if [ "${KS_GPU_TORCH:-1}" = 0 ]; then
	echo "skipped: KS_GPU_TORCH=0" > "$OUT/torch.txt"
elif late torch; then
	echo "skipped: past the deadline" > "$OUT/torch.txt"
elif python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	cat > "$W/torch_loop.py" <<'PY'
import sys, time, torch
torch.manual_seed(0)
a = torch.randn(1024, 1024, device="cuda"); x = torch.randn(8, 16, 64, 64, device="cuda")
conv = torch.nn.Conv2d(16, 16, 3, padding=1).cuda()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(n):
    b = a @ a; y = conv(x)
torch.cuda.synchronize()
print("torch: checksum %.6e %.6e" % (b.double().sum().item(), y.double().sum().item()))
print("torch: seconds %.4f" % (time.perf_counter() - t), file=sys.stderr)
PY
	# The same work captured into a CUDA graph and replayed: kscope runs
	# the graph node by node for the kernels it collects.
	cat > "$W/torch_graph.py" <<'PY'
import torch
torch.manual_seed(0)
a = torch.randn(512, 512, device="cuda"); x = torch.randn(4, 16, 32, 32, device="cuda")
conv = torch.nn.Conv2d(16, 16, 3, padding=1).cuda()
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(3):
        b = a @ a; y = conv(x)
torch.cuda.current_stream().wait_stream(s)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    b = a @ a; y = torch.relu(conv(x)) + b.sum()
for _ in range(4):
    g.replay()
torch.cuda.synchronize()
print("torchgraph: checksum %.6e %.6e" % (b.double().sum().item(), y.double().sum().item()))
PY
	{
		# Native and with nothing matching, alternating; 9 pairs.
		for i in 1 2 3 4 5 6 7 8 9; do
			(cd "$W" && timeout 45 python3 torch_loop.py 6000 2>&1 | sed 's/^/native /')
			(cd "$W" && timeout 60 "$KSCOPE" op -o "$W/torch" --kernel-name nomatch_xyz -- python3 torch_loop.py 6000 2>&1 | sed 's/^/kscope /')
		done
		(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 90 "$KSCOPE" op -o "$W/torch" --kernel-name '*gemm|*conv' --launch-count 3 -- python3 torch_loop.py 2>&1)
		echo "--- CUDA graph"
		(cd "$W" && timeout 60 python3 torch_graph.py 2>&1 | sed 's/^/native /')
		(cd "$W" && KSCOPE_OP_CUDA_HW=0 timeout 90 "$KSCOPE" op -o "$W/torchg" --launch-count 40 -- python3 torch_graph.py 2>&1)
	} > "$OUT/torch.txt"
	python3 - "$OUT/torch.txt" >> "$OUT/torch.txt" <<'PY'
import re, statistics, sys
t = {"native": [], "kscope": []}
for line in open(sys.argv[1]):
    m = re.match(r"(native|kscope) torch: seconds ([0-9.]+)", line)
    if m:
        t[m.group(1)].append(float(m.group(2)))
n, k = statistics.median(t["native"]), statistics.median(t["kscope"])
print("overhead with nothing matching: native median %.4f s, kscope median %.4f s, ratio %.3f "
      "(%d pairs)" % (n, k, k / n, len(t["native"])))
sums = {}
for line in open(sys.argv[1]):
    m = re.match(r"(native |kscope )?(torch|torchgraph): checksum (.*)", line.strip())
    if m:
        sums.setdefault(m.group(2), {}).setdefault((m.group(1) or "kscope ").strip(), set()).add(m.group(3))
for prog, by in sorted(sums.items()):
    print("%s checksums: native %s, kscope %s, equal: %s" % (prog, sorted(by.get("native", [])),
          sorted(by.get("kscope", [])), "yes" if by.get("native") == by.get("kscope") else "no"))
PY
	log "torch done"
else
	echo "PyTorch with CUDA not available" > "$OUT/torch.txt"
fi

# Files over 4 MB (memory backups) stay behind: what comes back is limited.
(cd "$W" && find logs op_* hw_* app_* cal_* ball_* rng_* tree_* gc_* fw_* filt torch torchg -type f -size -4M 2>/dev/null) > "$W/files.txt"
tar -czf "$OUT/logs.tar.gz" -C "$W" -T "$W/files.txt" 2>/dev/null
log "done, fail=$fail"
exit $fail
