#!/bin/sh
# long-fuzz.sh [-r RUNS] [-t SECONDS] [-b BUILD_DIR] [TARGET...]
# A long run of libFuzzer targets, one after the other, each in one process
# (no -jobs/-workers), from a scratch copy of its committed seed corpus
# (the tree is never modified). Stops a target at RUNS executions
# (default 10000000) or SECONDS (default: none), whichever comes first,
# and prints its executions, rate and crashes; exits non-zero if any target
# found a crash, leak or timeout (the reproducer is left in the work folder).
# Needs the clang fuzz build:
#   CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
#       -DRPCRDMA_SANITIZE=ON -DRPCRDMA_FUZZ=ON
#   cmake --build build-asan --target fuzz_rr_call fuzz_rr_reply ...
# Default targets: every fuzzer with a seed corpus.
set -eu
runs=10000000 secs=0 build=build-asan
while getopts r:t:b: o; do
	case $o in
	r) runs=$OPTARG ;;
	t) secs=$OPTARG ;;
	b) build=$OPTARG ;;
	*) sed -n '2,14p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
src=$(cd "$(dirname "$0")" && pwd)
[ $# -gt 0 ] || set -- fuzz_hdr_decode fuzz_cm_private fuzz_ulb_call_scan fuzz_ulb_reply_walk \
	fuzz_rr_call fuzz_rr_reply
work=${LONG_FUZZ_WORK:-$build/long-fuzz}
mkdir -p "$work"
fail=0
for t in "$@"; do
	bin=$(find "$build" -name "$t" -type f -perm -u+x | head -1)
	case $t in
	fuzz_hdr_decode) seeds=$src/corpus/hdr_decode ;;
	fuzz_cm_private) seeds=$src/corpus/cm_private ;;
	fuzz_rr_call) seeds=$src/corpus/rr_call ;;
	fuzz_rr_reply) seeds=$src/corpus/rr_reply ;;
	*) seeds=$src/corpus/$t ;;
	esac
	if [ -z "$bin" ]; then
		echo "$t: not built in $build"
		fail=1
		continue
	fi
	rm -rf "$work/$t"
	mkdir -p "$work/$t"
	cp "$seeds"/* "$work/$t"/ 2>/dev/null || true
	start=$(date +%s)
	set +e
	"$bin" -runs="$runs" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$work/$t.crash-" "$work/$t" \
		>"$work/$t.log" 2>&1
	rc=$?
	set -e
	end=$(date +%s)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t.log")
	el=$((end - start))
	echo "$t: ${execs:-?} executions in ${el} s ($(( ${execs:-0} / (el > 0 ? el : 1) )) /s)," \
		"$( [ $rc -eq 0 ] && echo "0 crashes" || echo "FAILED rc=$rc, see $work/$t.log")"
	[ $rc -eq 0 ] || fail=1
done
exit $fail
