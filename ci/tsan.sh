#!/bin/sh
# The ThreadSanitizer stage of ci/test.sh (run on its own: ci/tsan.sh [jobs]):
# a clang build with -DRPCRDMA_TSAN=ON of the transport, fabric and soak
# suites and of the plugin's unit tests that run without ganesha (the preload
# library itself is never instrumented: it runs inside an uninstrumented
# ganesha; its payload pool's structures are, built without the interposer:
# test_rrp_payload_threads). Any report fails the stage, including one from a
# server process (rr_test_server) whose exit status a test does not look at:
# reports also go to files, build-tsan/tsan-report.<pid>. No suppressions: docs/threading.md
# says what runs on which thread and how each hand-off is ordered.
set -eu
cd "$(dirname "$0")/.."
jobs=${1:-$(nproc 2>/dev/null || echo 2)}
tests="test_transport_shapes test_transport_hostile test_transport_faults
 test_transport_config test_transport_bounds test_transport_srq test_transport_sinks
 test_transport_soak test_transport_devrm test_transport_evt test_transport_backchannel
 test_requester_checks
 test_rr_fuzz_seeds test_fabric_conformance test_fabric_leaks test_rr_handoff test_rrp_workq
 test_rrp_slots test_rrp_config test_rrp_backchannel test_rrp_payload_threads"

CC=clang CXX=clang++ cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DRPCRDMA_TSAN=ON \
	>/dev/null
# shellcheck disable=SC2086
cmake --build build-tsan -j"$jobs" --target $tests
rm -f build-tsan/tsan-report.*
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 log_path=$PWD/build-tsan/tsan-report"
rc=0
ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 600 \
	-L 'transport|fabric|soak' || rc=1
ctest --test-dir build-tsan --output-on-failure -j"$jobs" --timeout 600 \
	-L plugin -R '^(WorkQueue|RrpSlots|RrpConfig|RrpBackchannel|PayloadThreads)\.' || rc=1
if ls build-tsan/tsan-report.* >/dev/null 2>&1; then
	cat build-tsan/tsan-report.*
	echo "ThreadSanitizer: the reports above"
	rc=1
fi
exit $rc
