#!/bin/sh
# run-fuzzer.sh FUZZER SEED_DIR WORK_DIR SECONDS
# Runs one libFuzzer target for a bounded time on a copy of its seed corpus and
# prints the execs count; exits non-zero on any crash, leak or timeout it finds.
set -eu
fuzzer=$1 seeds=$2 work=$3 secs=$4
rm -rf "$work"; mkdir -p "$work"
cp "$seeds"/* "$work"/ 2>/dev/null || true
log=$work.log
set +e
"$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	-artifact_prefix="$work.crash-" "$work" >"$log" 2>&1
rc=$?
set -e
grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "$log" || true
if [ $rc -ne 0 ]; then
	tail -50 "$log"
	echo "FUZZER FAILED rc=$rc ($(basename "$fuzzer"))"
	exit 1
fi
echo "fuzzer $(basename "$fuzzer"): 0 crashes"
