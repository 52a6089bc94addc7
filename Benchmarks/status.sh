#!/usr/bin/env bash
# `mediafetch status` of a shared run, by the run's size: wall time and peak memory for runs of COUNTS items in a
# PostgreSQL ledger, so that a run of a million is seen to cost what one of ten thousand does. The rows are written
# straight into the ledger's tables by SQL (90% stored, 9% pending, 1% failed, one worker), not fetched: what is
# measured is the status, not a run.
#
#   Benchmarks/status.sh
#   COUNTS="10000 100000 1000000" RUNS=5 Benchmarks/status.sh
#
# Environment: COUNTS (run sizes, default "10000 1000000"), RUNS (rounds, default 3; the median is printed),
# MEDIAFETCH (a prebuilt binary; default: swift build -c release). A throwaway PostgreSQL 15 cluster (Debian's
# postgresql) runs on a free loopback port for the script's length.
set -euo pipefail

COUNTS=${COUNTS:-"10000 1000000"}
RUNS=${RUNS:-3}
for count in $COUNTS; do
    [[ $count =~ ^[1-9][0-9]*$ ]] || { echo "COUNTS holds whole numbers of items, not \"$count\"" >&2; exit 2; }
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "RUNS must be 1 or more, not \"$RUNS\"" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)

source "$ROOT/Benchmarks/common.sh"
for tool in /usr/bin/time "$PGBIN/initdb" "$PGBIN/pg_ctl" "$PGBIN/psql"; do
    command -v "$tool" > /dev/null || { echo "missing: $tool (apt-get install time postgresql)" >&2; exit 2; }
done
ensure_mediafetch

WORK=$(mktemp -d /tmp/mediafetch-status.XXXXXX)
trap 'stop_postgres || true; rm -rf "$WORK"' EXIT
start_postgres
sql() { "$PGBIN/psql" -q -v ON_ERROR_STOP=1 -d "$LEDGER" -c "$1" > /dev/null; }

config() { # RUN -> the config's path
    cat > "$WORK/$1.yaml" <<YAML
ledger: $LEDGER
name: $1
source:
  use: urls
  file: $WORK/urls.txt
sink:
  use: directory
  path: $WORK/out
state: $WORK/state
YAML
    echo "$WORK/$1.yaml"
}
touch "$WORK/urls.txt"

# The first status opens the ledger, which makes its tables.
"$MEDIAFETCH" status "$(config empty)" > /dev/null

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '%-12s %9s %10s  %s\n' "items" "wall s" "peak MiB" "totals"
for count in $COUNTS; do
    run="status-$count"
    # Each row with what a planned asset of a shared run carries: its item's JSON, its place, its name.
    sql "INSERT INTO mediafetch_items (run, source, item_id, asset, title, url, expected_bytes, received_bytes,
            status, reason, attempts, location, updated_at, seq, item, plan_path)
        SELECT '$run', 'urls', 'http://127.0.0.1/d' || g / 1000 || '/f' || g || '.bin', 'preview', 'f' || g,
            'http://127.0.0.1/d' || g / 1000 || '/f' || g || '.bin', 1024, 1024,
            CASE WHEN g % 100 = 0 THEN 'failed' WHEN g % 10 = 0 THEN 'pending' ELSE 'stored' END,
            CASE WHEN g % 100 = 0 THEN 'HTTP 404' END, 1, 'f' || g || '.bin', extract(epoch FROM now()), g,
            '{\"previewURL\":\"http:\\/\\/127.0.0.1\\/f' || g || '.bin\",\"kind\":\"file\",\"id\":\"' || g
                || '\",\"title\":\"f' || g || '\"}',
            'f' || g || '.bin'
        FROM generate_series(1, $count) g;
        INSERT INTO mediafetch_runs (run, planned, planned_items) VALUES ('$run', true, $count);
        INSERT INTO mediafetch_workers (run, worker, state, stored, bytes)
            VALUES ('$run', 'w1', 'done', $count, $count * 1024);
        ANALYZE mediafetch_items;"
    file=$(config "$run")
    walls="" peaks=""
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$MEDIAFETCH" status "$file" > "$WORK/status.txt"
        read -r wall kb < "$WORK/time.txt"
        walls+="$wall"$'\n'
        peaks+="$kb"$'\n'
    done
    printf '%-12s %9s %10s  %s\n' "$count" "$(printf '%s' "$walls" | median)" \
        "$(printf '%s' "$peaks" | median | awk '{ printf "%.1f", $1 / 1024 }')" "$(sed -n 2p "$WORK/status.txt")"
done
