#!/bin/bash
# Interop VM suite (issue #6): one qemu boot (KVM where the host has it, else TCG) of Debian's kernel
# with Soft-RoCE (rdma_rxe), running (1) the fabric conformance suite on the verbs provider, (2) the
# NFS test list against knfsd over RDMA (reference), (3) the same list against ganesha +
# librpcrdma_ganesha.so, (4) device removal, (5) 1-3 again on soft-iWARP (siw, issue #36), then
# prints a results table. See ci/vm/README.md.
#
# Usage: ci/vm/run.sh                  one release (RPCRDMA_VM_RELEASE, default bookworm)
#        ci/vm/run.sh --all-releases  bookworm then trixie, one table (all-releases.sh)
# Env: RPCRDMA_VM_RELEASE  bookworm (default): Debian 12's kernel 6.1, the host root (ganesha 4.3);
#                          trixie: Debian 13's kernel 6.12, the trixie root (ganesha 6.5) from
#                          RPCRDMA_ROOTS (default /var/cache/rpcrdma-roots, ci/release-root.sh)
#      RPCRDMA_BUILD_DIR   build dir (default: build/ in the repo; trixie: build-trixie/)
#      RPCRDMA_VM_WORK     cache/work dir (default: ci/vm/work; trixie: ci/vm/work/trixie)
#      RPCRDMA_VM_TIMEOUT  seconds for the whole guest run (default 3000, also bench)
#      RPCRDMA_VM_VERSIONS NFS versions (default "3 4.1 4.2")
#      RPCRDMA_VM_GANESHA_TCP  control run of the list against ganesha's own TCP transport (tells
#                          ganesha/config trouble from plugin trouble): 1 (default) NFSv4.1 only,
#                          all = every version, 0 = skip
#      RPCRDMA_VM_TEST_TIMEOUT seconds per test (default 240)
#      RPCRDMA_VM_ONLY=fabric  run only the rxe and siw setups and the fabric suite on each, skip the NFS parts
#      RPCRDMA_VM_ONLY=siw     run only the setups and part 5 (siw: fabric suite, knfsd, ganesha, Use_SRQ)
#      RPCRDMA_VM_SIW=0    no soft-iWARP (part 5): siw.ko is then not built either
#      RPCRDMA_VM_ACCEL    kvm or tcg (default: kvm when /dev/kvm opens and the host's KVM is
#                          hardware-assisted, kvm_intel or kvm_amd; tcg otherwise)
#      RPCRDMA_VM_ONLY=bench   instead of 1-3: the throughput bench (guest-bench.sh), knfsd vs
#                          ganesha+rpcrdma, versions "3 4.1" unless RPCRDMA_VM_VERSIONS says;
#                          RPCRDMA_VM_BENCH_ROUNDS (3), RPCRDMA_VM_BENCH_MB (dd file, 64),
#                          RPCRDMA_VM_BENCH_SECS (per fio job, 5), RPCRDMA_VM_BENCH_TCP=1 (each
#                          server over TCP too, as controls); table + out/bench.json;
#                          RPCRDMA_VM_BENCH_JOBS: only these cells (e.g. "fio_randwrite4k");
#                          RPCRDMA_VM_BENCH_STRACE=1: diagnosis, not figures: ganesha's system calls
#                          per fio job (strace -c -f, out/bench/strace-*.txt; strace slows it);
#                          RPCRDMA_VM_BENCH_PERF=1: diagnosis: the whole guest's CPU per fio job by
#                          thread, library and function (perf record -a, out/bench/perf-*.txt)
#      RPCRDMA_VM_ONLY=devrm   run only the rxe setup and part 4 (device removal under ganesha+rpcrdma)
#      RPCRDMA_VM_DEVRM=0  skip part 4 in a full run
#      RPCRDMA_VM_ONLY=scale   only the kernel client at scale (guest-scale.sh, issue #33): many
#                          nconnect mounts, v3 and v4.1, with I/O on all, ganesha+rpcrdma then knfsd;
#                          RPCRDMA_VM_SCALE_ADDRS (server addresses: 12, trixie 4), _EXPORTS (3), _NCONNECT
#                          (16), _MB (2 MiB per mount), _FLOOR_MB (384: no more mounts below it),
#                          _GANESHA_TCP (1: the same against ganesha's own TCP as a control; 0 skips),
#                          _VERSIONS ("3 4.1"), _SRQ (1: Use_SRQ on in ganesha's RDMA block),
#                          _KNFSD (0: skip the knfsd column), _LEASE (ganesha's Lease_Lifetime in
#                          this part; default ganesha.conf's 10 s, knfsd's as well)
#      RPCRDMA_VM_ONLY=cluster only the kernel client against two ganesha heads over CephFS
#                          (guest-cluster.sh, issue #35): Ceph in the guest, heads a and b with
#                          rados_cluster, a mount of each, write through a / read through b, a
#                          SIGKILLed and restarted under a dd loop; RPCRDMA_VM_CLUSTER_GRACE (90 s),
#                          _LEASE (20 s), _MB (4 MiB a round), _TIME_SCALE (8: ceph-cluster.sh's
#                          waits times this)
#      RPCRDMA_VM_MEM_MB   the guest's memory in MiB (default 2048)
#      RPCRDMA_VM_FABRIC_FILTER  --gtest_filter for the fabric suite (default: all)
#      RPCRDMA_VM_TESTS    only these tests of the list, "mount" first (e.g. "mount rsize_4k")
#      RPCRDMA_VM_SHELL=1  drop to a shell in the guest at the end (interactive)
#      RPCRDMA_VM_CLOCK=hpet  the guest's clocksource as TCG leaves it (default tsc, see APPEND)
#      RPCRDMA_VM_MTU      MTU of the dummy netdev under rxe0 (default 1500: RoCE MTU 1024; 9000
#                          gives 4096, as jumbo-frame RoCE fabrics run); the rxe0 row shows it
#      RPCRDMA_VM_REPORT_ONLY=1  no boot: print the table of the last run (ci/vm/work/out)
# Exit: 0 if the rxe setup and every knfsd test pass, the fabric suite passes (or is not built),
# and no test passes on knfsd but fails on ganesha+rpcrdma; the same on siw0 when siw.ko is there
# (siw "not available", e.g. no linux-source to build it from, is no failure); 1 otherwise.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
[ "${1:-}" = --all-releases ] && exec "$HERE/all-releases.sh"
RELEASE=${RPCRDMA_VM_RELEASE:-bookworm}
case $RELEASE in
bookworm)	# Debian 12: kernel 6.1, ganesha 4.3, everything from the host root
	W=${RPCRDMA_VM_WORK:-$HERE/work}
	BUILDDIR=${RPCRDMA_BUILD_DIR:-$REPO/build}
	SHARE=/ ;;
trixie)		# Debian 13: kernel 6.12, ganesha 6.5, the guest's programs from the trixie root
	W=${RPCRDMA_VM_WORK:-$HERE/work/trixie}
	BUILDDIR=${RPCRDMA_BUILD_DIR:-$REPO/build-trixie}
	SHARE=${RPCRDMA_ROOTS:-/var/cache/rpcrdma-roots}/trixie ;;
*) echo "run.sh: unknown RPCRDMA_VM_RELEASE=$RELEASE (bookworm, trixie)"; exit 2 ;;
esac
export RPCRDMA_VM_RELEASE=$RELEASE RPCRDMA_VM_WORK=$W
BUILDDIR=$(cd "$BUILDDIR" 2>/dev/null && pwd || echo "$BUILDDIR")
GT=3000
# the bench with its TCP controls runs 24 cells of about a minute each
[ "${RPCRDMA_VM_ONLY:-}" = bench ] && GT=3000
GT=${RPCRDMA_VM_TIMEOUT:-$GT}
mkdir -p "$W"
T0=$(date +%s)

OUT=$W/out
VERSIONS=${RPCRDMA_VM_VERSIONS:-3 4.1 4.2}
[ "${RPCRDMA_VM_ONLY:-}" = bench ] && VERSIONS=${RPCRDMA_VM_VERSIONS:-3 4.1}
host_info() { echo "host $(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)"; }
QRC=0; T1=$T0; T2=$T0
if [ "${RPCRDMA_VM_REPORT_ONLY:-0}" != 1 ]; then
	eval "$("$HERE/prepare.sh" | tail -1)" || { echo "run.sh: prepare failed"; exit 1; }
	[ -f "${KERNEL:-}" ] && [ -f "${INITRD:-}" ] || { echo "run.sh: no kernel/initrd"; exit 1; }
	T1=$(date +%s)
	# what the guest's siw columns rest on: the kernel's module, one built by siw-module.sh, or
	# none and why (quotes dropped: the guest sources these lines)
	KV=${KERNEL##*/vmlinuz-}
	case ${SIWKO:-} in
	"") SIW_MODULE=none
	    SIW_WHY=$(cat "$W/siw-$KV/unavailable" 2>/dev/null || echo "not built")
	    [ "${RPCRDMA_VM_SIW:-1}" = 0 ] && SIW_WHY="RPCRDMA_VM_SIW=0" ;;
	*/kernel-*) SIW_MODULE="siw.ko of the kernel package"; SIW_WHY="" ;;
	*) SIW_MODULE="siw.ko $(cat "$W/siw-$KV/origin" 2>/dev/null)"; SIW_WHY="" ;;
	esac
	SIW_MODULE=$(echo "$SIW_MODULE" | tr -d "'\n"); SIW_WHY=$(echo "$SIW_WHY" | tr -d "'\n")
	# KVM only where it is hardware-assisted: a /dev/kvm of a nested paravirtual hypervisor
	# (kvm_pvm) opens but cannot run a stock kernel (qemu aborts on -cpu host, hangs otherwise)
	ACCEL=${RPCRDMA_VM_ACCEL:-auto}
	if [ "$ACCEL" = auto ]; then
		ACCEL=tcg
		if [ -r /dev/kvm ] && [ -w /dev/kvm ] && { [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
			ACCEL=kvm
		fi
	fi
	case $ACCEL in
	kvm) QACCEL=(-accel kvm -cpu host) ;;
	tcg) QACCEL=(-accel tcg,thread=multi -cpu max) ;;
	*) echo "run.sh: RPCRDMA_VM_ACCEL=$ACCEL (kvm, tcg)"; exit 2 ;;
	esac

	rm -rf "$OUT"; mkdir -p "$OUT"
	cat > "$OUT/env" <<-EOF
	REPO='$REPO'
	BUILDDIR='$BUILDDIR'
	VM_RELEASE=$RELEASE
	GANESHA_EXPORT_FS=$([ "$RELEASE" = bookworm ] && echo tmpfs || echo ext4)
	GUEST_TIMEOUT=$GT
	VM_VERSIONS='$VERSIONS'
	BENCH_ROUNDS=${RPCRDMA_VM_BENCH_ROUNDS:-3}
	BENCH_MB=${RPCRDMA_VM_BENCH_MB:-64}
	BENCH_SECS=${RPCRDMA_VM_BENCH_SECS:-5}
	BENCH_TCP=${RPCRDMA_VM_BENCH_TCP:-0}
	BENCH_JOBS='${RPCRDMA_VM_BENCH_JOBS:-}'
	BENCH_STRACE=${RPCRDMA_VM_BENCH_STRACE:-0}
	BENCH_PERF=${RPCRDMA_VM_BENCH_PERF:-0}
	GANESHA_CONTROL=${RPCRDMA_VM_GANESHA_TCP:-1}
	GANESHA_DEVRM=${RPCRDMA_VM_DEVRM:-1}
	VM_TEST_TIMEOUT=${RPCRDMA_VM_TEST_TIMEOUT:-240}
	VM_ONLY='${RPCRDMA_VM_ONLY:-}'
	VM_FABRIC_FILTER='${RPCRDMA_VM_FABRIC_FILTER:-}'
	VM_TESTS='${RPCRDMA_VM_TESTS:-}'
	VM_MTU=${RPCRDMA_VM_MTU:-1500}
	VM_SIW=${RPCRDMA_VM_SIW:-1}
	SCALE_ADDRS=${RPCRDMA_VM_SCALE_ADDRS:-$([ "$RELEASE" = bookworm ] && echo 12 || echo 4)}
	SCALE_EXPORTS=${RPCRDMA_VM_SCALE_EXPORTS:-3}
	SCALE_NCONNECT=${RPCRDMA_VM_SCALE_NCONNECT:-16}
	SCALE_MB=${RPCRDMA_VM_SCALE_MB:-2}
	SCALE_FLOOR_MB=${RPCRDMA_VM_SCALE_FLOOR_MB:-384}
	SCALE_GANESHA_TCP=${RPCRDMA_VM_SCALE_GANESHA_TCP:-1}
	SCALE_VERSIONS='${RPCRDMA_VM_SCALE_VERSIONS:-3 4.1}'
	SCALE_SRQ=${RPCRDMA_VM_SCALE_SRQ:-0}
	SCALE_KNFSD=${RPCRDMA_VM_SCALE_KNFSD:-1}
	SCALE_LEASE=${RPCRDMA_VM_SCALE_LEASE:-}
	SIW_MODULE='$SIW_MODULE'
	SIW_WHY='$SIW_WHY'
	CLUSTER_GRACE=${RPCRDMA_VM_CLUSTER_GRACE:-90}
	CLUSTER_LEASE=${RPCRDMA_VM_CLUSTER_LEASE:-20}
	CLUSTER_MB=${RPCRDMA_VM_CLUSTER_MB:-4}
	CLUSTER_TIME_SCALE=${RPCRDMA_VM_CLUSTER_TIME_SCALE:-8}
	export CLUSTER_GRACE CLUSTER_LEASE CLUSTER_MB CLUSTER_TIME_SCALE
	export VM_RELEASE GANESHA_EXPORT_FS VM_VERSIONS GANESHA_CONTROL GANESHA_DEVRM VM_TEST_TIMEOUT VM_ONLY VM_FABRIC_FILTER VM_TESTS VM_MTU
	export VM_SIW SIW_MODULE SIW_WHY
	export SCALE_ADDRS SCALE_EXPORTS SCALE_NCONNECT SCALE_MB SCALE_FLOOR_MB SCALE_GANESHA_TCP SCALE_VERSIONS
	export SCALE_SRQ SCALE_KNFSD SCALE_LEASE
	export BENCH_ROUNDS BENCH_MB BENCH_SECS BENCH_TCP BENCH_JOBS BENCH_STRACE BENCH_PERF
	EOF
	APPEND="console=ttyS0 panic=-1 quiet"
	# TCG's vCPUs fail the kernel's TSC sync check, and the fallback clocksource (HPET) has no
	# vDSO: every clock_gettime of a user-space server would become a system call plus an
	# emulated MMIO read, which no real machine charges. The TSC, as on real hardware, unless
	# RPCRDMA_VM_CLOCK=hpet (the old behaviour, for comparison).
	CLOCK="guest clock HPET (clock_gettime is a system call)"
	if [ $ACCEL = kvm ]; then
		CLOCK="guest clock kvm-clock"
	elif [ "${RPCRDMA_VM_CLOCK:-tsc}" = tsc ]; then
		APPEND="$APPEND tsc=reliable clocksource=tsc"
		CLOCK="guest clock TSC (tsc=reliable: clock_gettime stays in the vDSO, as on real hardware)"
	fi
	[ "${RPCRDMA_VM_SHELL:-0}" = 1 ] && APPEND="$APPEND shell"
	# 6.12 under TCG on a loaded host can fail its IO-APIC timer check and panic at boot
	# ("IO-APIC + timer doesn't work!", seen here at load 14): the check is for real boards
	[ "$RELEASE" = bookworm ] || APPEND="$APPEND no_timer_check"
	echo "== interop VM ($RELEASE): kernel $(basename "$KERNEL"), build dir $BUILDDIR, guest programs from $SHARE (log: $OUT/vm.log)"
	MEM=${RPCRDMA_VM_MEM_MB:-2048}
	echo "guest $(basename "$KERNEL") under qemu ${ACCEL^^} -smp 2 -m $MEM, $CLOCK; $(host_info) at start" \
		> "$OUT/host-info"
	CON=(-nographic)
	[ "${RPCRDMA_VM_SHELL:-0}" = 1 ] || CON=(-display none -serial "file:$OUT/vm.log" -monitor none)
	# The guest's host0 share: the host root, or (trixie) the release root with this checkout and
	# the build dir bound into it at their own paths, in a mount namespace of qemu's own (as
	# ci/release-root.sh does), so the guest reads the scripts and the plugin where it expects.
	NS=()
	if [ "$SHARE" != / ]; then
		[ -x "$SHARE/usr/bin/ganesha.nfsd" ] || { echo "run.sh: no $RELEASE root in $SHARE (ci/release-root.sh $RELEASE true)"; exit 1; }
		BIND="mount --bind '$REPO' '$SHARE$REPO'"
		case "$BUILDDIR/" in "$REPO"/*) ;; *) BIND="$BIND && mkdir -p '$SHARE$BUILDDIR' && mount --bind '$BUILDDIR' '$SHARE$BUILDDIR'" ;; esac
		mkdir -p "$SHARE$REPO"
		NS=(unshare --mount --propagation private sh -c "$BIND && exec \"\$@\"" sh)
	fi
	timeout -s KILL $((GT + 120)) "${NS[@]}" qemu-system-x86_64 "${QACCEL[@]}" -m "$MEM" -smp 2 \
		-no-reboot -nic none "${CON[@]}" \
		-virtfs local,path="$SHARE",mount_tag=host0,security_model=none,readonly=on,multidevs=remap \
		-virtfs local,path="$OUT",mount_tag=out0,security_model=none,multidevs=remap \
		-kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND"
	QRC=$?
	T2=$(date +%s)
	echo "load $(cut -d" " -f1-3 /proc/loadavg) at end" >> "$OUT/host-info"
fi
[ -f "$OUT/vm.log" ] && tr -d '\r' < "$OUT/vm.log" > "$OUT/vm.log.txt"

# ---------------------------------------------------------------- results
R=$OUT/results
# the console copy is the fallback if the 9p file is missing
[ -s "$R" ] || grep -a '^RESULT ' "$OUT/vm.log.txt" 2>/dev/null | sed 's/^RESULT //' > "$R"
sed -i 's/^RESULT //' "$R" 2>/dev/null
fail=0; why=()
get() { # server vers test -> "status secs"
	awk -v s="$1" -v v="$2" -v t="$3" '$1==s && $2==v && $3==t {print $4, $5; f=1; exit} END{if(!f) print "-", ""}' "$R"
}
CW=16	# a cell's width
cell() { local st secs; read -r st secs <<<"$(get "$@")"
	if [ "$st" = - ]; then printf "%-${CW}s" "n-a"; else printf "%-${CW}s" "$st ${secs}s"; fi; }
notes() { awk -v s="$1" -v t="$2" '$1==s && $3==t {for (i = 6; i <= NF; i++) printf " %s", $i; exit}' "$R"; }
siw_on=0	# siw0 came up: its columns count like rxe0's
[ "$(get setup - siw0 | cut -d' ' -f1)" = pass ] && siw_on=1

echo
echo "================ interop VM results ================"
printf '%-28s %s%s\n' "rxe0 setup" "$(cell setup - rxe0)" "$(notes setup rxe0)"
printf '%-28s %s\n' "rping via host root (chroot)" "$(cell setup - host_rping)"
fabric_row() { # LABEL TITLE: the fabric suite's row; a failure fails the run
	local st secs fnote
	read -r st secs <<<"$(awk -v l="$1" '$1==l{print $4, $5; exit}' "$R")"
	fnote=$(notes "$1" conformance)
	case "${st:-}" in
	pass) printf '%-28s %s\n' "$2" "pass ${secs}s $fnote" ;;
	fail) printf '%-28s %s\n' "$2" "FAIL ${secs}s $fnote"; fail=1; why+=("$2 failed")
	      echo "    failed: $(grep -a '^\[  FAILED  \] [A-Za-z]' "$OUT/$1.log" | awk '{print $4}' | sort -u | tr '\n' ' ')"
	      grep -aE 'Segmentation|Abort|terminate called' "$OUT/$1.log" | head -3 | sed 's/^/    /'
	      echo "    (full log: $OUT/$1.log)" ;;
	*) case "${RPCRDMA_VM_ONLY:-}" in
	   devrm|bench|scale|cluster) printf '%-28s %s\n' "$2" "not run (RPCRDMA_VM_ONLY=$RPCRDMA_VM_ONLY)" ;;
	   *) printf '%-28s %s\n' "$2" "not available $fnote" ;;
	   esac ;;
	esac
}
[ "${RPCRDMA_VM_ONLY:-}" = siw ] || fabric_row fabric "fabric conformance (verbs)"
# siw0: "not available" (no module for this kernel) is said, and is no failure
case "$(get setup - siw0 | cut -d' ' -f1)" in
pass) printf '%-28s %s%s\n' "siw0 setup" "$(cell setup - siw0)" "$(notes setup siw0)"
      printf '%-28s %s\n' "rping over siw0 (chroot)" "$(cell setup - siw_rping)"
      fabric_row fabric-siw "fabric conformance on siw0" ;;
fail) printf '%-28s %s%s\n' "siw0 setup" "FAIL" "$(notes setup siw0)"; fail=1; why+=("siw0 setup failed") ;;
na) printf '%-28s %s%s\n' "siw0 setup" "not available:" "$(notes setup siw0)" ;;
*) case "${RPCRDMA_VM_ONLY:-}" in devrm|bench|scale|cluster) ;; *) printf '%-28s %s\n' "siw0 setup" "not run" ;; esac ;;
esac
[ "$(get setup - rxe0 | cut -d' ' -f1)" = pass ] || { fail=1; why+=("rxe0 setup did not pass"); }

finish() {
	grep -aq GUEST-MAIN-DONE "$OUT/vm.log.txt" 2>/dev/null || { fail=1; why+=("guest did not finish (timeout or crash; qemu rc=$QRC)"); }
	echo
	echo "time: prepare $((T1 - T0))s, VM $((T2 - T1))s, total $(( $(date +%s) - T0 ))s"
	if [ $fail = 0 ]; then echo "INTEROP VM: PASS"; exit 0; fi
	echo "INTEROP VM: FAIL"; for w in "${why[@]:0:25}"; do echo "  - $w"; done
	[ ${#why[@]} -le 25 ] || echo "  - ... and $(( ${#why[@]} - 25 )) more"
	exit 1
}
# part 4: device removal (guest-devrm.sh); a failing check fails the run, "na" does not
devrm_report() {
	grep -q "^devrm " "$R" || return 0
	echo
	echo "-- device removal under ganesha+rpcrdma (ci/vm/guest-devrm.sh)"
	awk '$1=="devrm" {n=""; for (i = 6; i <= NF; i++) n = n " " $i; printf "  %-28s %-5s %6ss %s\n", $3, $4, $5, n}' "$R"
	if awk '$1=="devrm" && $4=="fail" {f=1} END{exit !f}' "$R"; then
		fail=1; why+=("device removal: $(awk '$1=="devrm" && $4=="fail" {printf "%s ", $3}' "$R")failed")
	fi
}
if [ "${RPCRDMA_VM_ONLY:-}" = devrm ]; then
	devrm_report
	grep -q "^devrm " "$R" || { fail=1; why+=("no device-removal results (see $OUT/guest.log)"); }
	finish
fi
if [ "${RPCRDMA_VM_ONLY:-}" = cluster ]; then
	# two ganesha heads over CephFS (guest-cluster.sh): its rows; a failing one fails the run
	echo
	echo "-- the kernel client against two ganesha heads over CephFS (ci/vm/guest-cluster.sh)"
	awk '$1=="cluster" {n=""; for (i = 6; i <= NF; i++) n = n " " $i; printf "  %-26s %-5s %6ss %s\n", $3, $4, $5, n}' "$R"
	grep -q "^cluster " "$R" || { fail=1; why+=("no cluster results (see $OUT/guest.log)"); }
	if awk '$1=="cluster" && $4!="pass" {f=1} END{exit !f}' "$R"; then
		fail=1; why+=("cluster: $(awk '$1=="cluster" && $4!="pass" {printf "%s ", $3}' "$R")did not pass")
	fi
	echo "(logs: $OUT/cluster-a.log, cluster-b.log, cluster-trace.txt, cluster-loop.log, cluster-ceph-log/)"
	echo
	if [ -s "$OUT/dmesg-errors.txt" ]; then
		echo "-- dmesg (error lines; all: $OUT/dmesg.txt)"; head -30 "$OUT/dmesg-errors.txt"
	fi
	finish
fi
if [ "${RPCRDMA_VM_ONLY:-}" = scale ]; then
	# the kernel client at scale (guest-scale.sh): each server's rows side by side; a failing
	# row fails the run
	echo
	echo "-- the kernel client at scale (ci/vm/guest-scale.sh)"
	for s in ganesha ganesha-tcp knfsd; do
		start_row=$(awk -v s="scale-$s" '$1==s && $3=="start" {print $4; exit}' "$R")
		[ -n "$start_row" ] && printf '  %-11s %-7s %-5s\n' "$s" start "$start_row"
		awk -v s="scale-$s" -v n="$s" '$1==s && $3!="start" {t=""; for (i = 6; i <= NF; i++) t = t " " $i
			printf "  %-11s %-7s %-5s %6ss %s\n", n, $3, $4, $5, t}' "$R"
	done
	for s in ganesha $([ "${RPCRDMA_VM_SCALE_KNFSD:-1}" = 0 ] || echo knfsd); do
		grep -q "^scale-$s " "$R" || { fail=1; why+=("no scale results for $s (see $OUT/guest.log)"); }
	done
	# the ganesha/tcp control's rows are a note, as in the test list; the others fail the run
	if awk '($1=="scale-ganesha" || $1=="scale-knfsd") && $4=="fail" {f=1} END{exit !f}' "$R"; then
		fail=1; why+=("scale: $(awk '($1=="scale-ganesha" || $1=="scale-knfsd") && $4=="fail" {printf "%s %s, ", $1, $3}' "$R")failed")
	fi
	awk '$1=="scale-ganesha-tcp" && $4=="fail" {f=1} END{exit !f}' "$R" &&
		echo "note: the ganesha/tcp control has failing rows (ganesha's, not the RDMA transport's); no change to the exit status"
	[ -s "$OUT/scale-ganesha.stats" ] && { echo; echo "-- scale-ganesha: plugin counters"; cat "$OUT/scale-ganesha.stats"; }
	[ -s "$OUT/scale-ganesha.startup" ] && { echo; echo "-- scale-ganesha: start-up lines"; sed 's/^/  /' "$OUT/scale-ganesha.startup"; }
	echo
	if [ -s "$OUT/dmesg-errors.txt" ]; then
		echo "-- dmesg (error lines; all: $OUT/dmesg.txt)"; head -30 "$OUT/dmesg-errors.txt"
	fi
	finish
fi
if [ "${RPCRDMA_VM_ONLY:-}" = bench ]; then
	printf '%-28s %s\n' "knfsd start" "$(grep -aq 'FAIL \(nfsd\|portlist\|mountd\)' "$OUT/guest.log" && echo FAIL || echo pass)"
	printf '%-28s %s\n' "ganesha+rpcrdma start" "$(cell ganesha - start)"
	echo
	python3 "$HERE/bench_table.py" "$OUT" || { fail=1; why+=("bench: a measurement failed or is missing (see $OUT/guest.log)"); }
	echo "(raw: $OUT/bench.results, $OUT/bench/; summary: $OUT/bench.json)"
	finish
fi

COLS="knfsd ganesha"
grep -q "^ganesha-tcp " "$R" && COLS="knfsd ganesha-tcp ganesha"
grep -q "^ganesha-srq " "$R" && COLS="$COLS ganesha-srq"
[ "${RPCRDMA_VM_ONLY:-}" = siw ] && COLS=""
SCOLS=""
if [ $siw_on = 1 ]; then
	SCOLS="knfsd-siw ganesha-siw"
	grep -q "^ganesha-srq-siw " "$R" && SCOLS="$SCOLS ganesha-srq-siw"
fi
declare -A HDR=([knfsd]="knfsd/rdma" [ganesha]="ganesha+rpcrdma" [ganesha-tcp]="ganesha/tcp ctl"
	[ganesha-srq]="rpcrdma Use_SRQ" [knfsd-siw]="knfsd/rdma" [ganesha-siw]="ganesha+rpcrdma"
	[ganesha-srq-siw]="rpcrdma Use_SRQ")
start_row() { # LABEL TITLE: whether ganesha came up; not starting fails the run
	local st note
	st=$(get "$1" - start | cut -d' ' -f1)
	note=$(notes "$1" start)
	case "$st" in
	pass) printf '%-28s %s\n' "$2 start" "pass$note" ;;
	fail) printf '%-28s %s\n' "$2 start" "FAIL$note"; fail=1; why+=("$2 did not start")
	      tail -8 "$OUT/$1.log" 2>/dev/null | sed 's/^/    /' ;;
	na) printf '%-28s %s\n' "$2" "not available$note" ;;
	esac
}
for c in $COLS $SCOLS; do
	case $c in ganesha|ganesha-srq|ganesha-siw|ganesha-srq-siw)
		start_row $c "$(case $c in *siw) echo "siw0 ";; esac)${HDR[$c]}" ;;
	esac
done
[ "${RPCRDMA_VM_ONLY:-}" = fabric ] && COLS="" SCOLS=""
echo
n=0; for c in $COLS; do n=$((n + 1)); done
if [ -n "$SCOLS" ]; then
	printf '%-21s' ""
	[ -n "$COLS" ] && printf "%-$((n * CW))s" "| rxe0 (Soft-RoCE)"
	echo "| siw0 (soft-iWARP)"
fi
[ -n "$COLS$SCOLS" ] && printf '%-6s %-14s' vers test
for c in $COLS; do printf "%-${CW}s" "${HDR[$c]}"; done
for c in $SCOLS; do printf "%-${CW}s" "${HDR[$c]}"; done; [ -n "$COLS$SCOLS" ] && echo
VERS=$(awk '$1=="knfsd" || $1=="knfsd-siw" {print $2}' "$R" | awk '!s[$0]++')
[ -n "$VERS" ] || VERS=$VERSIONS
TESTS=$(awk '$1=="knfsd" || $1=="knfsd-siw" {print $3}' "$R" | awk '!s[$0]++')
[ -n "$TESTS" ] || [ "${RPCRDMA_VM_ONLY:-}" = fabric ] || { fail=1; why+=("no knfsd results at all (VM or guest broke; see $OUT/vm.log.txt)"); }
st() { get "$@" | cut -d' ' -f1; }
declare -A NP NT
[ -n "$COLS$SCOLS" ] || VERS=""
for v in $VERS; do for t in $TESTS; do
	printf '%-6s %-14s' "$v" "$t"
	for c in $COLS $SCOLS; do cell "$c" "$v" "$t"; done; echo
	# the same rule on each device: every knfsd test passes, and nothing that passes on knfsd
	# fails on ganesha+rpcrdma, with or without Use_SRQ
	for dev in rxe siw; do
		if [ $dev = rxe ]; then sfx=""; [ -n "$COLS" ] || continue
		else sfx=-siw; [ $siw_on = 1 ] || continue; fi
		k=$(st knfsd$sfx "$v" "$t")
		NT[$dev]=$(( ${NT[$dev]:-0} + 1 )); [ "$k" = pass ] && NP[$dev]=$(( ${NP[$dev]:-0} + 1 ))
		[ "$k" = pass ] || { fail=1; why+=("knfsd${sfx:+ on siw0} v$v $t: $k"); }
		[ "$k" = pass ] && [ "$(st ganesha$sfx "$v" "$t")" = fail ] &&
			{ fail=1; why+=("ganesha+rpcrdma${sfx:+ on siw0} v$v $t fails where knfsd passes"); }
		[ "$k" = pass ] && [ "$(st ganesha-srq$sfx "$v" "$t")" = fail ] &&
			{ fail=1; why+=("ganesha+rpcrdma (Use_SRQ)${sfx:+ on siw0} v$v $t fails where knfsd passes"); }
	done
done; done
[ -n "${NT[rxe]:-}" ] && echo "knfsd on rxe0: ${NP[rxe]:-0}/${NT[rxe]} pass"
[ -n "${NT[siw]:-}" ] && echo "knfsd on siw0: ${NP[siw]:-0}/${NT[siw]} pass"
if [[ $COLS == *ganesha-tcp* ]]; then
	bad=$(awk '$1=="ganesha-tcp" && $4!="pass"' "$R" | wc -l)
	[ "$bad" = 0 ] || echo "note: the ganesha/tcp control has $bad non-passing rows (ganesha or config trouble," \
		"not the RDMA transport; log: $OUT/ganesha-tcp.log); it does not change the exit status"
fi
# why each failing row failed (the guest's "[test] FAIL: ..." line just before its RESULT line)
reasons=$(awk '/^  \[[a-z_0-9]+\] (FAIL|killed)/{r=r $0 " "} /^RESULT /{if($5=="fail" && $2!~/^fabric/) print "  " $2 " v" $3 " " $4 ":" (r==""?" " ($7==""?"(no reason printed)":$7):substr(r,1,300)); r=""}' \
	"$OUT/guest.log" 2>/dev/null | sed 's/  \[[a-z_0-9]*\]//g')
[ -n "$reasons" ] && { echo; echo "-- failures (details: $OUT/guest.log)"; echo "$reasons" | head -40; }
for c in ganesha-tcp ganesha ganesha-srq ganesha-siw ganesha-srq-siw; do
	[ -s "$OUT/$c.stats" ] && { echo; echo "-- $c: plugin counters ($OUT/$c.stats)"; cat "$OUT/$c.stats"; }
	[ -s "$OUT/$c.counters" ] && { echo; echo "-- $c: counter lines from the ganesha log"; cat "$OUT/$c.counters"; }
done
# the plugin's start-up lines (device, transport, limits; Use_SRQ's fallback; memlock) as
# ganesha logged them, and RLIMIT_MEMLOCK as the harness left it and as ganesha had it running
for c in ganesha ganesha-srq ganesha-siw ganesha-srq-siw; do
	[ -s "$OUT/$c.startup" ] || [ -s "$OUT/$c.memlock" ] || continue
	echo; echo "-- $c: start-up lines from the ganesha log ($OUT/$c.log)"
	sed 's/^/  /' "$OUT/$c.startup" 2>/dev/null
	sed 's/^/  /' "$OUT/$c.memlock" 2>/dev/null
done
devrm_report
echo
if [ -s "$OUT/dmesg-errors.txt" ]; then
	echo "-- dmesg (xprtrdma/svcrdma/rxe/siw lines mentioning errors; all: $OUT/dmesg.txt)"
	head -40 "$OUT/dmesg-errors.txt"
else
	echo "-- dmesg: no xprtrdma/svcrdma/rxe/siw error lines"
fi
finish
