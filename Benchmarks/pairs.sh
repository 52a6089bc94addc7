#!/usr/bin/env bash
# Two builds of mediafetch compared in alternating pairs: each pair runs Benchmarks/million.sh once with each build
# (one row, one tool, RUNS=1), the older first in odd pairs and the newer first in even ones, so that a drift of the
# machine falls on both alike; then the pair's ratios (new over old) of wall time and of CPU (user + system), and
# their medians and ranges. On a machine whose speed drifts from one hour to the next by more than a change is worth,
# only ratios of runs made side by side compare two builds, as every "pairs" figure in Benchmarks/README.md does.
#
#   Benchmarks/pairs.sh OLD NEW                                     # 8 pairs, 20,000 x 10 KB, sync: false
#   PAIRS=6 TOOL=mediafetch-durable Benchmarks/pairs.sh OLD NEW     # the durable default
#   ROW=100000x1 PAIRS=4 Benchmarks/pairs.sh OLD NEW
#   ROW=20000x1 TOOL=mediafetch-shared Benchmarks/pairs.sh OLD NEW  # a worker of a shared run (PostgreSQL)
#
# OLD and NEW are mediafetch binaries (build each with `swift build -c release --static-swift-stdlib --product
# mediafetch` and copy it aside). Environment: PAIRS (default 8), ROW (COUNTxKB, default 20000x10), TOOL
# (mediafetch-nosync, the default, mediafetch-durable, or mediafetch-shared: a worker of a shared run, with a fresh
# PostgreSQL each run), SERVER and CACHE as for million.sh, FRESH_FS (default 1: each run on an ext4 made for it,
# which needs root, mkfs.ext4 and a loop device; set it empty to write into /tmp).
set -euo pipefail

[[ $# -eq 2 ]] || { echo "usage: Benchmarks/pairs.sh OLD-BINARY NEW-BINARY (see the comment at the top)" >&2; exit 2; }
for binary in "$1" "$2"; do
    [[ -f $binary && -x $binary ]] || { echo "not an executable: $binary" >&2; exit 2; }
done
OLD=$(realpath "$1")
NEW=$(realpath "$2")
PAIRS=${PAIRS:-8}
[[ $PAIRS =~ ^[1-9][0-9]*$ ]] || { echo "PAIRS must be a count of 1 or more, not $PAIRS" >&2; exit 2; }
ROW=${ROW:-20000x10}
TOOL=${TOOL:-mediafetch-nosync}
case $TOOL in
    mediafetch-nosync | mediafetch-durable | mediafetch-shared) ;;
    *) echo "TOOL must be mediafetch-nosync, mediafetch-durable or mediafetch-shared, not $TOOL" >&2; exit 2 ;;
esac
export FRESH_FS=${FRESH_FS-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# one BINARY: "wall cpu" of one run of the row by that build (million.sh's line for the tool).
one() {
    local line
    # awk reads to the end: a reader that stopped at the first match (head) could kill million.sh with SIGPIPE on
    # its next line, before its exit trap unmounts the fresh filesystem.
    # No re-run: it is not compared, and counting its requests waits out nginx's log flush twice.
    line=$(MEDIAFETCH=$1 RUNS=1 ROWS=$ROW TOOLS=$TOOL RERUN=0 "$ROOT/Benchmarks/million.sh" |
        awk -v tool=" $TOOL " 'index($0, tool) && !found { print; found = 1 }') || true
    read -r _ _ _ _ _ wall _ _ cpu <<< "$line"
    if [[ -z ${wall:-} || $wall == FAIL || -z ${cpu:-} ]]; then
        echo "the run of $1 failed (million.sh printed: ${line:-nothing}); run million.sh alone to see why" >&2
        exit 1
    fi
    echo "$wall $cpu"
}

echo "$PAIRS pairs of $ROW, $TOOL: new $NEW over old $OLD"
results=()
for pair in $(seq "$PAIRS"); do
    if (( pair % 2 == 1 )); then
        read -r old_wall old_cpu < <(one "$OLD")
        read -r new_wall new_cpu < <(one "$NEW")
    else
        read -r new_wall new_cpu < <(one "$NEW")
        read -r old_wall old_cpu < <(one "$OLD")
    fi
    results+=("$old_wall $old_cpu $new_wall $new_cpu")
    awk -v p="$pair" -v ow="$old_wall" -v oc="$old_cpu" -v nw="$new_wall" -v nc="$new_cpu" 'BEGIN {
        printf "pair %d: old %s s (CPU %s s), new %s s (CPU %s s): wall %.3f, CPU %.3f\n", p, ow, oc, nw, nc,
            nw / ow, nc / oc }'
done
printf '%s\n' "${results[@]}" | python3 -c '
import statistics, sys
rows = [list(map(float, line.split())) for line in sys.stdin if line.strip()]
walls = [new / old for old, _, new, _ in rows]
cpus = [new / old for _, old, _, new in rows]
print("median of %d pairs: wall %.3f (%.3f-%.3f), CPU %.3f (%.3f-%.3f); old %.2f s, new %.2f s (median walls)" % (
    len(rows), statistics.median(walls), min(walls), max(walls), statistics.median(cpus), min(cpus), max(cpus),
    statistics.median(r[0] for r in rows), statistics.median(r[2] for r in rows)))
'
