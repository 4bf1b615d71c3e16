#!/bin/sh
# ulb_cost.sh [BUILD_DIR] - instructions per op of the ULB's per-call stages
# (scan + Read-chunk check + reply plan) for each READ/WRITE shape, by callgrind.
set -eu
B=${1:-build}
N=1000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '| shape | ULB instructions per op |\n|---|---:|\n'
for c in v3-read v3-write v40-read v41-read v41-write v42-read-plus; do
	valgrind --tool=callgrind --callgrind-out-file="$tmp/$c.cg" --toggle-collect='ulb_cost_op*' \
		"$B/bench/ulb/ulb_cost" "$c" "$N" >/dev/null 2>&1
	ir=$(callgrind_annotate "$tmp/$c.cg" | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')
	printf '| %s | %d |\n' "$c" $((ir / N))
done
