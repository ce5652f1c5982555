#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time.
#   usage: run.sh FUZZER SEED_CORPUS WORK_CORPUS SECONDS
# New inputs go to WORK_CORPUS (in the build tree); the committed seeds are
# only read.  A crash leaves its input in WORK_CORPUS/../ and fails the test.
set -euo pipefail
fuzzer=$1 seeds=$2 work=$3 seconds=$4
mkdir -p "$work"
cd "$(dirname "$work")"
exec "$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$(dirname "$work")/" \
	"$work" "$seeds"
