#!/usr/bin/env bash
# The CUDA calibration's PTX kernels, assembled by the CUDA toolkit's
# ptxas for their own target and for sm_90: the PTX runs only on a GPU,
# but a syntax error, an instruction the target lacks or an undeclared
# register fails here.  Skipped (77) without ptxas (on PATH, in
# $CUDA_HOME/bin or /usr/local/cuda/bin).
#
#   usage: test_calib_cuda_ptx.sh CALIB_PTX_DUMP
set -u
DUMP=$1
PTXAS=$(command -v ptxas || true)
for d in "${CUDA_HOME:-}" /usr/local/cuda; do
	[[ -z "$PTXAS" && -n "$d" && -x "$d/bin/ptxas" ]] && PTXAS=$d/bin/ptxas
done
if [[ -z "$PTXAS" ]]; then
	echo "skip: no ptxas (the CUDA toolkit is not installed)"
	exit 77
fi
tmp=$(mktemp -d /tmp/kscope-calib-ptx.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$DUMP" "$tmp" || { echo "FAIL: calib_ptx_dump"; exit 1; }
n=0
for ptx in "$tmp"/*.ptx; do
	target=$(cat "${ptx%.ptx}.target")
	for arch in "$target" sm_90; do
		if ! "$PTXAS" -arch="$arch" "$ptx" -o "$tmp/out.cubin" 2>"$tmp/err"; then
			echo "FAIL: ptxas -arch=$arch $(basename "$ptx"):"
			cat "$tmp/err"
			exit 1
		fi
		# A warning is a mistake too (an unused or truncated value).
		if [[ -s "$tmp/err" ]]; then
			echo "FAIL: ptxas -arch=$arch $(basename "$ptx") warns:"
			cat "$tmp/err"
			exit 1
		fi
		n=$((n + 1))
	done
done
[[ $n == 8 ]] || { echo "FAIL: $n assemblies, expected 8 (4 kernels, 2 targets)"; exit 1; }
echo "ok: calib_cuda_ptx ($n assemblies with $PTXAS)"
