#!/usr/bin/env bash
# How close kscope predict comes to the measured time of real kernels on
# this machine, next to a plain roofline.
#
#   usage: bench/predict_accuracy.sh [BUILD_DIR] [--chip NAME|FILE]
#              [--calib FILE] [--runs R] [--kernel NAME]... [--tiny]
#              [--csv FILE]
#
# BUILD_DIR (default build/) holds kscope and the kernels of
# examples/predict (vadd, scale, dot, matmul, built by `make`); this script
# builds nothing.  The models are examples/predict/*.kpp.
#
# The chip (default host) must exist: for host, when
# $XDG_DATA_HOME/kscope/chips/host.json (~/.local/share when unset) is
# missing, `kscope calibrate` is run first, which measures it (and this
# machine's roofline ceilings if they are not cached; a --quick host chip
# is measured again in full).  The roofline baseline reads kscope
# calibrate's cache file, found by running `kscope calibrate` (it prints
# the cached ceilings at once), or given with --calib.
#
# For each kernel at footprints from L1-resident to DRAM-resident (from
# the cache sizes in the calibration), the kernel runs R times (default 3;
# once when a call takes over a second) and its median KSCOPE_TIME_NS is
# compared with `kscope predict --chip CHIP -D N=... -D TILE=... MODEL`.
# Printed: the table of points, then per kernel and overall the MAPE and
# Kendall tau of the prediction and of the roofline, and whether the
# target (MAPE <= 20%) is met.  --tiny runs one small size per kernel
# (the test suite's smoke test).  Exit status: 0 when every point was
# measured and predicted (whatever the errors), 1 when something failed,
# 2 for a usage error.
set -uo pipefail

usage() {
	sed -n 's/^#   usage: /usage: /p; s/^#              /       /p' "$0" >&2
	exit 2
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$ROOT/build
CHIP=host
CALIB=
PYARGS=()
while (($#)); do
	case $1 in
	--chip) [[ $# -ge 2 ]] || usage; CHIP=$2; shift ;;
	--calib) [[ $# -ge 2 ]] || usage; CALIB=$2; shift ;;
	--runs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || usage; PYARGS+=(--runs "$2"); shift ;;
	--kernel) [[ $# -ge 2 ]] || usage; PYARGS+=(--kernel "$2"); shift ;;
	--csv) [[ $# -ge 2 ]] || usage; PYARGS+=(--csv "$2"); shift ;;
	--tiny) PYARGS+=(--sizes tiny) ;;
	-h | --help) usage ;;
	-*) usage ;;
	*) BUILD=$1 ;;
	esac
	shift
done
BUILD=$(realpath -m "$BUILD")
KSCOPE=$BUILD/kscope
KDIR=$BUILD/examples/predict

[[ -x $KSCOPE ]] || { echo "bench: $KSCOPE is missing; build first (make)" >&2; exit 1; }
for k in vadd scale dot matmul; do
	[[ -x $KDIR/$k ]] || { echo "bench: $KDIR/$k is missing; build first (make)" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "bench: python3 is missing" >&2; exit 1; }

# The host chip, where kscope predict looks for it.
if [[ $CHIP == host ]]; then
	if [[ ${XDG_DATA_HOME:-} == /* ]]; then
		chipfile=$XDG_DATA_HOME/kscope/chips/host.json
	else
		chipfile=$HOME/.local/share/kscope/chips/host.json
	fi
	if [[ ! -f $chipfile ]]; then
		echo "bench: no host chip at $chipfile: running kscope calibrate" >&2
		"$KSCOPE" calibrate >/dev/null || { echo "bench: kscope calibrate failed" >&2; exit 1; }
		[[ -f $chipfile ]] || { echo "bench: kscope calibrate wrote no $chipfile" >&2; exit 1; }
	fi
fi

# The roofline's ceilings.
if [[ -z $CALIB ]]; then
	nochip=()
	[[ $CHIP == host ]] || nochip=(--no-chip)
	out=$("$KSCOPE" calibrate "${nochip[@]}") || { echo "bench: kscope calibrate failed" >&2; exit 1; }
	CALIB=$(sed -n 's/^file: //p' <<<"$out")
	[[ -f $CALIB ]] || { echo "bench: kscope calibrate named no calibration file" >&2; exit 1; }
fi

exec python3 "$ROOT/bench/predict_accuracy.py" --kscope "$KSCOPE" --kernels-dir "$KDIR" \
	--models-dir "$ROOT/examples/predict" --chip "$CHIP" --calib "$CALIB" "${PYARGS[@]}"
