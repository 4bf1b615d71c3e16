#!/bin/bash
# ci/vm/run.sh --all-releases: the interop VM once per release, one after the other, each with its
# own table, then one table of all of them side by side:
#   bookworm  kernel 6.1,  ganesha 4.3, the host root, build dir $RPCRDMA_BUILD_DIR (default build/)
#   trixie    kernel 6.12, ganesha 6.5, the trixie root (ci/release-root.sh trixie), build dir
#             $RPCRDMA_BUILD_DIR_TRIXIE (default build-trixie/, built in that root)
# Env: RPCRDMA_VM_RELEASES (default "bookworm trixie"); every other RPCRDMA_VM_* setting reaches
# each run (RPCRDMA_VM_REPORT_ONLY=1: no boot, the tables of the last runs). Each release keeps its
# own work dir (ci/vm/work, ci/vm/work/trixie). Exit 1 when any release's run fails.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RELS=${RPCRDMA_VM_RELEASES:-bookworm trixie}
unset RPCRDMA_VM_WORK
declare -A WORK=([bookworm]=$HERE/work [trixie]=$HERE/work/trixie)
declare -A LABEL=([bookworm]="kernel 6.1 / ganesha 4.3" [trixie]="kernel 6.12 / ganesha 6.5")
declare -A BDIR=([bookworm]=${RPCRDMA_BUILD_DIR:-$REPO/build} [trixie]=${RPCRDMA_BUILD_DIR_TRIXIE:-$REPO/build-trixie})
declare -A RC WALL
rc=0
for r in $RELS; do
	[ -n "${WORK[$r]:-}" ] || { echo "all-releases: unknown release $r"; exit 2; }
	echo "######## $r: ${LABEL[$r]} (build dir ${BDIR[$r]})"
	t0=$(date +%s)
	RPCRDMA_VM_RELEASE=$r RPCRDMA_BUILD_DIR=${BDIR[$r]} "$HERE/run.sh"
	RC[$r]=$?
	WALL[$r]=$(( $(date +%s) - t0 ))
	[ "${RC[$r]}" = 0 ] || rc=1
done

# one table: per release the columns knfsd/rdma, ganesha+rpcrdma and its Use_SRQ run on rxe0, and
# the same three on siw0 where any release ran them
get() { # results server vers test -> "status secs"
	awk -v s="$2" -v v="$3" -v t="$4" '$1==s && $2==v && $3==t {print $4, $5; f=1; exit} END{if(!f) print "-", ""}' "$1"
}
cell() { local st secs; read -r st secs <<<"$(get "$@")"
	if [ "$st" = - ]; then printf '%-12s' "n-a"; else printf '%-12s' "$st ${secs}s"; fi; }
echo
echo "================ interop VM, all releases ================"
SIW=0
for r in $RELS; do grep -qs '^knfsd-siw ' "${WORK[$r]}/out/results" && SIW=1; done
W=36; [ $SIW = 1 ] && W=72
printf '%-21s' ""; for r in $RELS; do printf "| %-${W}s" "${LABEL[$r]}"; done; echo
if [ $SIW = 1 ]; then
	printf '%-21s' ""; for r in $RELS; do printf '| %-36s%-36s' "rxe0" "siw0"; done; echo
fi
printf '%-6s %-14s' vers test
for r in $RELS; do
	printf '| %-12s%-12s%-12s' knfsd ganesha+rr +SRQ
	[ $SIW = 1 ] && printf '%-12s%-12s%-12s' knfsd ganesha+rr +SRQ
done; echo
first=$(echo "$RELS" | awk '{print $1}')
R0=${WORK[$first]}/out/results
VERS=$(for r in $RELS; do awk '$1=="knfsd" || $1=="knfsd-siw" {print $2}' "${WORK[$r]}/out/results" 2>/dev/null; done | awk '!s[$0]++')
TESTS=$(for r in $RELS; do awk '$1=="knfsd" || $1=="knfsd-siw" {print $3}' "${WORK[$r]}/out/results" 2>/dev/null; done | awk '!s[$0]++')
for v in $VERS; do for t in $TESTS; do
	printf '%-6s %-14s' "$v" "$t"
	for r in $RELS; do
		f=${WORK[$r]}/out/results
		printf '| '; cell "$f" knfsd "$v" "$t"; cell "$f" ganesha "$v" "$t"; cell "$f" ganesha-srq "$v" "$t"
		if [ $SIW = 1 ]; then
			cell "$f" knfsd-siw "$v" "$t"; cell "$f" ganesha-siw "$v" "$t"; cell "$f" ganesha-srq-siw "$v" "$t"
		fi
	done; echo
done; done
for r in $RELS; do
	f=${WORK[$r]}/out/results
	[ -f "$f" ] || { echo "$r: no results ($f)"; continue; }
	printf '%-9s setup: rxe0 %s, fabric suite %s, ganesha/tcp control %s pass of %s' "$r" \
		"$(get "$f" setup - rxe0 | cut -d' ' -f1)" \
		"$(awk '$1=="fabric"{print $4; f=1} END{if(!f) print "n-a"}' "$f")" \
		"$(awk '$1=="ganesha-tcp" && $3!="start" && $4=="pass"' "$f" | wc -l)" \
		"$(awk '$1=="ganesha-tcp" && $3!="start"' "$f" | wc -l)"
	grep -q '^devrm ' "$f" && printf ', device removal %s fail' "$(awk '$1=="devrm" && $4=="fail"' "$f" | wc -l)"
	printf ', siw0 %s, fabric suite on siw0 %s' \
		"$(awk '$1=="setup" && $3=="siw0" {print ($4=="na" ? "not available" : $4); f=1} END{if(!f) print "n-a"}' "$f")" \
		"$(awk '$1=="fabric-siw"{print $4; f=1} END{if(!f) print "n-a"}' "$f")"
	[ -n "${RC[$r]:-}" ] && printf '; run.sh exit %s, wall %ss' "${RC[$r]}" "${WALL[$r]}"
	echo
done
exit $rc
