#!/usr/bin/env bash
# Times mediafetch's transports against curl -Z, aria2c and wget, all fetching the same generated tree
# from one nginx on 127.0.0.1, and prints wall time, throughput, peak memory and the ratio to curl -Z.
#
#   Benchmarks/run.sh                  # 2,000 files + one 512 MiB file, median of 3 runs
#   N=200 RUNS=1 Benchmarks/run.sh     # quicker
#
# Environment: N (files, default 2000), RUNS (default 3), CONCURRENCY (default 16), BIG_MIB (default 512),
# SMALL_N (the smaller run for the memory check, default 200), CACHE (where the tree is generated once,
# default .build/bench-cache), MEDIAFETCH (a prebuilt binary; default: swift build -c release),
# TOOLS (which rows; default: every row but the tar ones and the one-thread one; add curl-transport-tar
# curl-transport-tar-zstd tar-cf curl-transport-1thread). Each round runs every tool once, in turn.
set -euo pipefail

N=${N:-2000}
RUNS=${RUNS:-3}
CONCURRENCY=${CONCURRENCY:-16}
BIG_MIB=${BIG_MIB:-512}
SMALL_N=${SMALL_N:-200}
TOOLS=${TOOLS:-"curl-transport curl-transport-sha256 curl-transport-nosync foundation-transport curl+sync aria2c wget"}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$ROOT/.build/bench-cache}

# Only loopback: no proxy may redirect a request elsewhere.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

# aria2c and wget only when TOOLS has their rows.
needed=(nginx curl /usr/bin/time python3)
[[ " $TOOLS " == *" aria2c "* ]] && needed+=(aria2c)
[[ " $TOOLS " == *" wget "* ]] && needed+=(wget)
for tool in "${needed[@]}"; do
    command -v "$tool" > /dev/null || { echo "missing: $tool (apt-get install nginx-light curl aria2 wget time)" >&2; exit 2; }
done

source "$ROOT/Benchmarks/common.sh"
ensure_mediafetch

# --- the tree, generated once -------------------------------------------------------------------
make_tree

# --- nginx on a free loopback port --------------------------------------------------------------
make_work bench
# Every run writes here, after the previous run's files are deleted. Writing each run into a folder of its
# own instead (to spare runs ext4's check of recently deleted inodes) made the third run onwards 2-5x slower
# on this virtual disk: freshly allocated space is slow to write here, space just freed is not.
OUT=$WORK/out

PORT=$(free_port)
start_nginx "access_log off;" "listen 127.0.0.1:$PORT; root $TREE;"
for _ in $(seq 100); do curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$PORT/big.bin" -r 0-0 && break; sleep 0.1; done

BASE="http://127.0.0.1:$PORT"
ls "$TREE/files" | sort | head -n "$N" | sed "s|^|$BASE/files/|" > "$WORK/urls-$N.txt"
head -n "$SMALL_N" "$WORK/urls-$N.txt" > "$WORK/urls-$SMALL_N.txt"
echo "$BASE/big.bin" > "$WORK/urls-big.txt"
expected_bytes() { # list -> total bytes of its files in the tree
    sed "s|^$BASE/||" "$1" | (cd "$TREE" && xargs stat -c %s) | awk '{ s += $1 } END { print s }'
}

# --- one timed command --------------------------------------------------------------------------
# run_one NAME LIST COMMAND...: empties $OUT, runs COMMAND there, checks the bytes, prints "wall rss_kb".
run_one() {
    local name=$1 list=$2
    shift 2
    rm -rf "$OUT" "$OUT.state" && mkdir -p "$OUT"
    # Write back the previous run's files first, so no run pays for another's dirty pages.
    sync
    local status=0
    (cd "$OUT" && /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" > "$WORK/$name.log" 2>&1) || status=$?
    local got
    if [[ -f "$OUT/previews.tar" ]]; then
        # An archive: its entries' bytes, read back (outside the timed command).
        got=$(tar -xOf "$OUT/previews.tar" | wc -c)
    else
        got=$(find "$OUT" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
    fi
    if [[ $status -ne 0 || "$got" != "$(expected_bytes "$list")" ]]; then
        echo "  $name failed (exit $status, $got bytes); see its log:" >&2
        tail -5 "$WORK/$name.log" >&2
        echo "FAIL FAIL"
        return
    fi
    cat "$WORK/time.txt"
}

# The median of the numbers on stdin; FAIL when there are none or when any run failed (a failed round must
# not vanish into the median).
median() {
    sort -n | awk '$1 == "FAIL" { failed = 1 } { v[NR] = $1 }
        END { if (NR == 0 || failed) print "FAIL"; else print v[int((NR + 1) / 2)] }'
}

mediafetch_config() { # LIST TRANSPORT [SYNC] [SINK] -> config path
    local name="$2-${3:-true}-${4:-directory}"
    local path="$OUT"
    [[ ${4:-directory} == tar ]] && path="$OUT/previews.tar"
    cat > "$WORK/$name.yaml" <<YAML
source:
  use: urls
  file: $1
transport:
  use: $2
  concurrency: $CONCURRENCY
sink:
  use: ${4:-directory}
  path: $path
  layout: "{title}.{ext}"
$( [[ ${4:-directory} == tar ]] && printf '  manifest: false\n  playlist: false\n' || printf '  sync: %s\n' "${3:-true}" )
download:
  max-size: none   # the big file is larger than the default limit (50MB)
state: $OUT.state
YAML
    echo "$WORK/$name.yaml"
}

curl_config() { # LIST -> curl --config file with one url/output pair per line
    awk '{ n = split($0, p, "/"); printf "url = \"%s\"\noutput = \"%s\"\n", $0, p[n] }' "$1" > "$1.curl"
    echo "$1.curl"
}

command_for() { # TOOL LIST -> the command line, one word per line
    case $1 in
        curl-transport) printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" curl)" --quiet ;;
        foundation-transport) printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" foundation)" --quiet ;;
        curl-transport-nosync)
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" curl false)" --quiet ;;
        curl-transport-sha256)
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" curl)" --quiet --set download.verify=sha256 ;;
        curl-transport-1thread)
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" curl false)" --quiet --set transport.threads=1 ;;
        foundation-transport-nosync)
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" foundation false)" --quiet ;;
        curl-transport-tar)
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" curl true tar)" --quiet ;;
        curl-transport-tar-zstd)
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" curl true tar)" --quiet \
                --set sink.compression=zstd ;;
        tar-cf)
            # The directory sink into a folder, then tar -cf over it, as one command.
            local config
            config=$(mediafetch_config "$2" curl true)
            sed -i "s|path: $OUT\$|path: $OUT.folder|" "$config"
            printf '%s\n' sh -c 'rm -rf "$3" && "$1" run "$2" --quiet && tar -cf previews.tar -C "$3" . && rm -rf "$3"' \
                sh "$MEDIAFETCH" "$config" "$OUT.folder" ;;
        curl)
            if [[ $(wc -l < "$2") -eq 1 ]]; then
                printf '%s\n' curl -s -S --noproxy '*' -o "$OUT/$(basename "$(cat "$2")")" "$(cat "$2")"
            else
                printf '%s\n' curl -s -S --noproxy '*' -Z --parallel-max "$CONCURRENCY" --config "$(curl_config "$2")"
            fi
            ;;
        curl+sync)
            # curl -Z, then sync: the same durability the directory sink gives (it fsyncs each file).
            printf '%s\n' sh -c 'curl -s -S --noproxy "*" -Z --parallel-max "$1" --config "$2" && sync' sh \
                "$CONCURRENCY" "$(curl_config "$2")"
            ;;
        aria2c) printf '%s\n' aria2c -q -j "$CONCURRENCY" -i "$2" -d "$OUT" ;;
        wget) printf '%s\n' wget -q --no-proxy -i "$2" -P "$OUT" ;;
    esac
}

# bench LIST TOOLS...: RUNS rounds, each running every tool once in turn (so that a drift of the machine,
# such as writeback of an earlier run or ext4 skipping recently deleted inodes, falls on every tool alike);
# prints one line per tool: "tool median_wall peak_rss_mib".
bench() {
    local list=$1
    shift
    declare -A walls=() rss=()
    for _ in $(seq "$RUNS"); do
        for tool in "$@"; do
            local command=()
            mapfile -t command < <(command_for "$tool" "$list")
            read -r wall kb < <(run_one "$tool" "$list" "${command[@]}")
            walls[$tool]+="$wall "
            rss[$tool]+="$kb "
        done
    done
    for tool in "$@"; do
        local wall peak
        wall=$(printf '%s\n' ${walls[$tool]} | median)
        peak=$(printf '%s\n' ${rss[$tool]} | sort -n | tail -1)
        [[ $wall == FAIL ]] && peak=FAIL
        [[ $peak == FAIL ]] || peak=$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')
        echo "$tool $wall $peak"
    done
}

table() { # TITLE LIST TOOLS...
    local title=$1 list=$2
    shift 2
    local bytes reference=""
    bytes=$(expected_bytes "$list")
    echo
    echo "## $title ($(wc -l < "$list") files, $(awk -v b="$bytes" 'BEGIN { printf "%.2f GB", b / 1e9 }'), median of $RUNS)"
    printf '| %-28s | %9s | %9s | %14s | %8s |\n' "tool" "wall (s)" "MB/s" "peak RSS (MiB)" "vs curl"
    printf '| %-28s | %9s | %9s | %14s | %8s |\n' "---" "---:" "---:" "---:" "---:"
    local rows=()
    mapfile -t rows < <(bench "$list" "$@")
    for row in "${rows[@]}"; do
        read -r tool wall _ <<< "$row"
        [[ $tool == curl ]] && reference=$wall
    done
    for row in "${rows[@]}"; do
        read -r tool wall peak <<< "$row"
        local rate="-" ratio="-"
        if [[ $wall != FAIL ]]; then
            rate=$(awk -v b="$bytes" -v s="$wall" 'BEGIN { printf "%.0f", b / 1e6 / s }')
            [[ -n $reference && $reference != FAIL ]] && ratio=$(awk -v a="$wall" -v r="$reference" 'BEGIN { printf "%.2fx", a / r }')
        fi
        case $tool in
            curl) label="curl -Z --parallel-max $CONCURRENCY"
                [[ $(wc -l < "$list") -eq 1 ]] && label="curl -o" ;;
            curl+sync) label="curl -Z $CONCURRENCY, then sync" ;;
            aria2c) label="aria2c -j $CONCURRENCY" ;;
            wget) label="wget -i" ;;
            curl-transport) label="mediafetch use: curl" ;;
            foundation-transport) label="mediafetch use: foundation" ;;
            curl-transport-nosync) label="mediafetch curl, sync: false" ;;
            curl-transport-sha256) label="mediafetch curl, sha256" ;;
            curl-transport-1thread) label="mediafetch curl, 1 thread, no sync" ;;
            foundation-transport-nosync) label="mediafetch foundation, sync: false" ;;
            curl-transport-tar) label="mediafetch curl, tar sink" ;;
            curl-transport-tar-zstd) label="mediafetch curl, tar + zstd" ;;
            tar-cf) label="mediafetch curl, then tar -cf" ;;
            *) label=$tool ;;
        esac
        printf '| %-28s | %9s | %9s | %14s | %8s |\n' "$label" "$wall" "$rate" "$peak" "$ratio"
    done
}

# curl first in each table: it is the reference the ratios are taken against.
ordered=(curl)
for tool in $TOOLS; do [[ $tool == curl ]] || ordered+=("$tool"); done
table "Many files" "$WORK/urls-$N.txt" "${ordered[@]}"
table "Memory check: fewer files" "$WORK/urls-$SMALL_N.txt" curl curl-transport foundation-transport

big=()
for tool in curl curl+sync curl-transport curl-transport-sha256 curl-transport-nosync; do
    [[ " curl $TOOLS " == *" $tool "* ]] && big+=("$tool")
done
table "One $BIG_MIB MiB file" "$WORK/urls-big.txt" "${big[@]}"
