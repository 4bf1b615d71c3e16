#!/bin/sh
# Rewrite the generated part of docs/counters.md from rr_counters.def, via
# the built rpcrdma-stat (--counters-md). Usage: tools/update-counters-doc.sh [BUILD_DIR]
# The packaging test CountersDoc.MatchesTable fails while the two differ.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$top/build}/tools/rpcrdma-stat
doc=$top/docs/counters.md
begin='<!-- BEGIN rpcrdma-stat --counters-md -->'
end='<!-- END rpcrdma-stat --counters-md -->'
gen=$(mktemp)
trap 'rm -f "$gen" "$gen.new"' EXIT
"$bin" --counters-md >"$gen"
awk -v b="$begin" -v e="$end" -v g="$gen" '
	$0 == b { print; while ((getline l < g) > 0) print l; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }' "$doc" >"$gen.new"
mv "$gen.new" "$doc"
