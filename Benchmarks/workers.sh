#!/usr/bin/env bash
# Several mediafetch workers on one run through a PostgreSQL ledger, in one script:
#
# 1. N preview-like files from an nginx that limits each connection (limit_rate), so that the job is bound by the
#    network as with a far-away CDN, fetched by 1, 2 and 4 workers (each a process with CONCURRENCY transfers),
#    throughput and the speed-up over one worker beside the goal (4 workers >= 3.5x one).
# 2. The same N files unthrottled, one process, with the SQLite ledger and with the PostgreSQL one (a worker of a
#    shared run), alternating, median of RUNS: the PostgreSQL ledger's cost beside the goal (<= 10% wall time).
#
#   Benchmarks/workers.sh
#   N=500 RUNS=1 RATE=2m Benchmarks/workers.sh    # quicker
#
# Environment: N (files, default 2000), RUNS (default 3), RATE (nginx limit_rate per connection, default 4m),
# CONCURRENCY (transfers per worker when throttled, default 4), FAST_CONCURRENCY (unthrottled, default 16), WORKERS
# (default "1 2 4"; none: only the ledger comparison), CACHE (the generated tree, default .build/bench-cache), MEDIAFETCH (a prebuilt binary).
# A throwaway PostgreSQL 15 cluster (Debian's postgresql) runs on a free loopback port for the script's length.
set -euo pipefail

N=${N:-2000}
RUNS=${RUNS:-3}
RATE=${RATE:-4m}
CONCURRENCY=${CONCURRENCY:-4}
FAST_CONCURRENCY=${FAST_CONCURRENCY:-16}
WORKERS=${WORKERS:-"1 2 4"}
# WORKERS=none: no throttled rounds, only the ledger comparison.
[[ $WORKERS == none ]] && WORKERS=""
BIG_MIB=${BIG_MIB:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$ROOT/.build/bench-cache}

unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

source "$ROOT/Benchmarks/common.sh"
for tool in nginx curl python3 "$PGBIN/initdb" "$PGBIN/pg_ctl"; do
    command -v "$tool" > /dev/null || { echo "missing: $tool (apt-get install nginx-light curl python3 postgresql)" >&2; exit 2; }
done
ensure_mediafetch
make_tree

WORK=$(mktemp -d /tmp/mediafetch-workers.XXXXXX)
chmod 755 "$WORK"
NGINX_PID=""
cleanup() {
    stop_process "$NGINX_PID"
    stop_postgres
    rm -rf "$WORK"
}
trap cleanup EXIT


# --- PostgreSQL ----------------------------------------------------------------------------------
start_postgres max_connections=200

# --- nginx: one throttled server, one not --------------------------------------------------------
SLOW_PORT=$(free_port)
FAST_PORT=$(free_port)
# sendfile_max_chunk: without it a whole preview goes in one sendfile call, before limit_rate can act.
start_nginx "access_log off;" "listen 127.0.0.1:$SLOW_PORT; root $TREE; limit_rate $RATE; sendfile_max_chunk 32k;" \
    "listen 127.0.0.1:$FAST_PORT; root $TREE;"
for _ in $(seq 100); do curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$FAST_PORT/big.bin" -r 0-0 && break; sleep 0.1; done

ls "$TREE/files" | sort | head -n "$N" > "$WORK/names.txt"
sed "s|^|http://127.0.0.1:$SLOW_PORT/files/|" "$WORK/names.txt" > "$WORK/slow.txt"
sed "s|^|http://127.0.0.1:$FAST_PORT/files/|" "$WORK/names.txt" > "$WORK/fast.txt"
EXPECTED=$(cd "$TREE/files" && xargs stat -c %s < "$WORK/names.txt" | awk '{ s += $1 } END { print s }')

# config NAME LIST CONCURRENCY [LEDGER] -> path
config() {
    cat > "$WORK/$1.yaml" <<YAML
name: $1
$( [[ -n "${4:-}" ]] && echo "ledger: $4" )
source:
  use: urls
  file: $2
transport:
  use: curl
  concurrency: $3
sink:
  use: directory
  path: $WORK/out
  layout: "{title}.{ext}"
state: $WORK/state-$1
YAML
    echo "$WORK/$1.yaml"
}

now() { date +%s.%N; }

# round NAME CONFIG WORKERS -> wall seconds (FAIL when any worker failed or bytes are missing)
round() {
    rm -rf "$WORK/out" "$WORK/state-$1"
    mkdir -p "$WORK/out"
    sync
    local start pids=() status=0
    start=$(now)
    for index in $(seq "$3"); do
        "$MEDIAFETCH" run "$2" --quiet --worker "w$index" > "$WORK/$1-w$index.log" 2>&1 &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || status=$?; done
    local wall
    wall=$(echo "$(now) - $start" | bc)
    local got
    got=$(find "$WORK/out" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    if [[ $status -ne 0 || "$got" != "$EXPECTED" ]]; then
        echo "  $1 failed (exit $status, $got of $EXPECTED bytes); see $WORK/$1-w1.log:" >&2
        tail -5 "$WORK/$1-w1.log" >&2
        echo FAIL
        return
    fi
    echo "$wall"
}

median() {
    sort -n | awk '$1 == "FAIL" { failed = 1 } { v[NR] = $1 }
        END { if (NR == 0 || failed) print "FAIL"; else print v[int((NR + 1) / 2)] }'
}

MB=$(echo "scale=1; $EXPECTED / 1000000" | bc)
echo "$N files, $MB MB; nginx limit_rate $RATE per connection; $CONCURRENCY transfers per worker; PostgreSQL 15 on loopback"
echo "(machine shared with other jobs: figures taken under load)"
echo
echo "== throttled: workers on one run (PostgreSQL ledger) =="
printf '%-10s %10s %10s %10s\n' workers "wall s" "MB/s" speed-up
ONE=""
for workers in $WORKERS; do
    # Each round is a run of its own name, started from nothing.
    wall=$(round "slow-$workers" "$(config "slow-$workers" "$WORK/slow.txt" "$CONCURRENCY" "$LEDGER")" "$workers")
    if [[ $wall == FAIL ]]; then
        printf '%-10s %10s\n' "$workers" FAIL
        continue
    fi
    [[ -z "$ONE" ]] && ONE=$wall
    printf '%-10s %10.1f %10.1f %9.2fx\n' "$workers" "$wall" "$(echo "$EXPECTED / $wall / 1000000" | bc -l)" \
        "$(echo "$ONE / $wall" | bc -l)"
done
echo "goal: 4 workers >= 3.5x one"
echo
echo "== unthrottled: one process, SQLite ledger vs PostgreSQL ledger (median of $RUNS, alternating) =="
sqlite_walls=()
pg_walls=()
for run in $(seq "$RUNS"); do
    sqlite_walls+=("$(round fast-sqlite "$(config fast-sqlite "$WORK/fast.txt" "$FAST_CONCURRENCY")" 1)")
    "$MEDIAFETCH" clean "$WORK/fast-pg.yaml" --all > /dev/null 2>&1 || true
    pg_walls+=("$(round fast-pg "$(config fast-pg "$WORK/fast.txt" "$FAST_CONCURRENCY" "$LEDGER")" 1)")
    "$MEDIAFETCH" clean "$WORK/fast-pg.yaml" --all > /dev/null 2>&1 || true
done
SQLITE=$(printf '%s\n' "${sqlite_walls[@]}" | median)
PG=$(printf '%s\n' "${pg_walls[@]}" | median)
printf '%-12s %10s   (runs: %s)\n' sqlite "$SQLITE" "${sqlite_walls[*]}"
printf '%-12s %10s   (runs: %s)\n' postgresql "$PG" "${pg_walls[*]}"
if [[ $SQLITE != FAIL && $PG != FAIL ]]; then
    printf 'postgresql / sqlite: %.2fx wall time (goal: <= 1.10x)\n' "$(echo "$PG / $SQLITE" | bc -l)"
fi
