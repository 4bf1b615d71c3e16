#!/bin/sh
# The test command (README, .ci/run): install dependencies, then
#   1. gcc build, every ctest suite; the same sources without the verbs
#      provider and with rdma-core's headers poisoned (ci/noverbs.sh: the
#      codec, fabric and ulb suites); then bench/run.sh --quick (figures into
#      build/bench-quick.md, no thresholds);
#   2. clang build with ASan+UBSan(+LSan) and the libFuzzer targets, every suite
#      again plus the fuzzers for a bounded time (RPCRDMA_FUZZ_SECONDS each);
#   3. clang build with ThreadSanitizer: the transport, fabric and soak
#      suites and the plugin's unit tests that run without ganesha (the
#      preload library itself is never instrumented); any report fails it;
#   4. ganesha 6.5 in its Debian 13 release root (ci/release-root.sh):
#      the plugin, backchannel and packaging areas and the demo (and with
#      RPCRDMA_ALL_RELEASES=1 the same areas on ganesha 5.9, bookworm-backports);
#   5. the interop VM suite (ci/vm/run.sh), when present (with
#      RPCRDMA_ALL_RELEASES=1 also on kernel 6.12 / ganesha 6.5, and one table).
# Set RPCRDMA_SKIP_DEPS=1 to skip the apt step, RPCRDMA_SKIP_RELEASES=1 step 4,
# RPCRDMA_SKIP_VM=1 step 5.
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

if [ "${RPCRDMA_SKIP_DEPS:-0}" != 1 ]; then
	./ci/install-deps.sh
	# glusterfs-server and nfs-ganesha-gluster are installed now: the real
	# delegation-recall tests (tests/backchannel/test_delegation.cc) must run,
	# never skip
	export RR_BC_REQUIRE_DELEG=1
	# a fresh machine of our own: the package test may install and purge
	# the .deb (ci/package-test.sh; it skips everywhere else)
	export RPCRDMA_PACKAGE_TEST=1
fi

echo "== gcc build + ctest"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300 -LE interop

# A build of what must not need rdma-core: every library and tool (the
# plugin included) and the codec, fabric and ulb suites, which it then runs:
# the fabric's provider choice is what differs without verbs; transport,
# plugin and soak run above on the same soft fabric (the whole tree: about
# 12 minutes on 2 shared cores; this: see the closing note of #34).
echo "== gcc build without the verbs provider (ci/noverbs.sh)"
./ci/noverbs.sh "$jobs" 'codec|fabric|ulb' 'src/fabric src/rpcrdma src/ulb src/plugin tools tests/codec tests/fabric tests/ulb'

echo "== bench, quick mode (bounded, no thresholds: figures only)"
RPCRDMA_BENCH_OUT=$PWD/build/bench-quick.md bench/run.sh --quick
sed -n '/^Target met for/p' build/bench-quick.md

echo "== clang ASan+UBSan build + ctest (fuzzers included)"
CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug \
	-DRPCRDMA_SANITIZE=ON -DRPCRDMA_FUZZ=ON \
	-DRPCRDMA_FUZZ_SECONDS="${RPCRDMA_FUZZ_SECONDS:-20}" >/dev/null
cmake --build build-asan -j"$jobs"
# of the device-profile runs (ctest -L profile), the two that split work
# the most (min: one SGE, Read depth 1; cxgb4: iWARP's per-Read
# registrations) under ASan too; the others in stage 1 only. The reconnect
# storm (2,000 connections, a soft-fabric thread per busy one) runs in stage 1
# only: under ASan on 2 cores it takes minutes, and the admission code it
# drives is under ASan through test_transport_bounds. The soak suites at three
# event threads (evt3:) stay in stage 1 too: test_transport_evt drives several
# event threads under ASan.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 600 \
	-LE 'profile-(rxe|mlx5|irdma|bnxt_re|siw)' -E '^(evt3:)?Storm\.|^evt3:Receives/Soak\.'

echo "== fuzzers (execs, crashes)"
for log in build-asan/tests/*/*.corpus.log; do
	[ -f "$log" ] || continue
	runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -1)
	echo "$(basename "$log" .corpus.log): ${runs:-no summary}, 0 crashes (a crash fails ctest above)"
done

echo "== clang ThreadSanitizer build + ctest (transport, fabric, soak, plugin units)"
./ci/tsan.sh

# A release root (ci/release-root.sh): build there, run the areas that start
# the real ganesha, and preload the host's plugin (stage 1, ganesha 4.3) into
# that ganesha (a forced install of the wrong package must leave it alone).
# release_stage RELEASE GANESHA LABELS [ENV...]; LABELS: ctest -L's regex
release_stage() {
	rel=$1 gv=$2 labels=$3
	shift 3
	ci/release-root.sh "$rel" -- env "$@" sh -c "
		set -e
		cmake -S . -B build-$rel -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRPCRDMA_LTO=OFF >/dev/null
		cmake --build build-$rel -j$jobs >/dev/null
		RR_BC_REQUIRE_DELEG=1 RPCRDMA_OTHER_RELEASE_SO=$PWD/build/src/plugin/librpcrdma_ganesha.so \
			RPCRDMA_OTHER_RELEASE_GANESHA=4.3 \
			ctest --test-dir build-$rel --output-on-failure -j$jobs --timeout 300 \
			-L '$labels' -E '^package_test\$'"
	echo "== the $gv plugin preloaded into ganesha 4.3 (host)"
	RPCRDMA_OTHER_RELEASE_SO=$PWD/build-$rel/src/plugin/librpcrdma_ganesha.so \
		RPCRDMA_OTHER_RELEASE_GANESHA=$gv \
		ctest --test-dir build --output-on-failure -R OtherReleasesPlugin
}

if [ "${RPCRDMA_SKIP_RELEASES:-0}" != 1 ]; then
	# cluster: two ganesha 6.5 heads over trixie's Ceph 18 (docs/cluster.md;
	# about 70 s, the root's install-deps.sh installs Ceph)
	echo "== ganesha 6.5 release root (trixie): build, ctest plugin/backchannel/packaging/cluster, demo"
	release_stage trixie 6.5 'plugin|backchannel|packaging|cluster'
	ci/release-root.sh trixie -- env BUILD=build-trixie RPCRDMA_SKIP_DEPS=1 ci/demo.sh
	# ganesha 5.9 (bookworm-backports): RPCRDMA_ALL_RELEASES=1 (not in CI:
	# time). Its FSAL MEM aborts on NFSv3 REMOVE, over TCP too: FSAL VFS, in
	# a folder of the bind-mounted tree (ganesha refuses tmpfs, and must see
	# the folder's mount).
	if [ "${RPCRDMA_ALL_RELEASES:-0}" = 1 ]; then
		echo "== ganesha 5.9 release root (bookworm-backports): build, ctest plugin/backchannel/packaging"
		# no cluster: install-deps.sh installs no Ceph with backports' ganesha
		release_stage bookworm-backports 5.9 'plugin|backchannel|packaging' RR_TEST_FSAL=VFS \
			RR_TEST_VFS_BASE="$PWD/build-bookworm-backports"
	fi
fi

if [ "${RPCRDMA_SKIP_VM:-0}" != 1 ]; then
	echo "== interop VM suite (ctest -L interop: ci/vm/run.sh)"
	ctest --test-dir build -V -L interop
	# RPCRDMA_ALL_RELEASES=1: the VM again with Debian 13's kernel 6.12 and
	# ganesha 6.5 (build-trixie from step 4), then both releases in one table
	if [ "${RPCRDMA_ALL_RELEASES:-0}" = 1 ] && [ "${RPCRDMA_SKIP_RELEASES:-0}" != 1 ]; then
		echo "== interop VM suite, kernel 6.12 / ganesha 6.5 (RPCRDMA_VM_RELEASE=trixie)"
		RPCRDMA_VM_RELEASE=trixie ci/vm/run.sh
		RPCRDMA_VM_REPORT_ONLY=1 ci/vm/run.sh --all-releases | sed -n '/interop VM, all releases/,$p'
	fi
fi
echo "== ALL TESTS PASSED"
