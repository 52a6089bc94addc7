#!/usr/bin/env bash
# Many small files: wall time and peak memory of `mediafetch run` (urls source, curl transport) beside
# `curl -Z --parallel-max 16` and `wget -i`, all fetching the same generated files from one nginx on 127.0.0.1
# (or Python's http.server, SERVER=python), and a re-run of mediafetch over everything it stored (no request may
# reach the server: its access log says).
#
#   Benchmarks/million.sh                           # the headline rows: 20,000 x 10 KB and 100,000 x 1 KB
#   ROWS="1000x1 10000x1 100000x1 1000000x1" Benchmarks/million.sh
#   ROWS=10000x1 TOOLS="mediafetch-nosync" Benchmarks/million.sh
#   ROWS="10000x1 100000x1" TOOLS="mediafetch-shared" Benchmarks/million.sh   # a worker of a shared run
#   SERVER=python ROWS="200x10 2000x10 20000x10" TOOLS="mediafetch-nosync curl" Benchmarks/million.sh
#   SERVER=nginx-debian ROWS="20000x10 200000x1" Benchmarks/million.sh         # nginx as Debian configures it
#   TLS=1 ROWS=20000x10 TOOLS="mediafetch-nosync curl" Benchmarks/million.sh   # over https (HTTP/2)
#
# Environment: ROWS (COUNTxKB words, default "20000x10 100000x1"), RUNS (rounds, default 1; the median is
# printed), CONCURRENCY (default 16), TOOLS (default: mediafetch-nosync mediafetch-durable curl wget; also
# curl-sync: curl, then `sync -f` of the folder, so that its files are on the disk when it ends, as the durable
# default's are; and mediafetch-shared: one worker of a shared run, `sync: false`, its ledger a throwaway
# PostgreSQL 15 on loopback), RERUN (default 1; 0 leaves out the re-run, as Benchmarks/pairs.sh does),
# WGET_MAX (the largest count wget is run for, default 100000: it fetches one at a time), FRESH_FS (set: each run
# writes into an ext4 made for it, see fresh_filesystem; needs root, mkfs.ext4 and a loop device), CACHE (where the
# trees are generated once, default .build/bench-cache), MEDIAFETCH (a prebuilt binary; default: swift build
# -c release), SERVER (nginx, the default: one worker, buffered log, keep-alive without a limit; nginx-debian:
# nginx with Debian's own /etc/nginx/nginx.conf, a worker a core, every request logged, 1,000 requests a connection;
# or python: `python3 -m http.server` as anyone starts it, HTTP/1.0, a connection a request, a listen backlog of 5,
# every request logged to its stderr), TLS (set, with the default nginx: https, HTTP/2 where the client offers it,
# with a self-signed certificate made for the run that every tool is told to trust; needs openssl). Each round runs
# every tool once, in turn, so a drift of the machine falls on all alike.
set -euo pipefail

ROWS=${ROWS:-"20000x10 100000x1"}
SERVER=${SERVER:-nginx}
RUNS=${RUNS:-1}
CONCURRENCY=${CONCURRENCY:-16}
TOOLS=${TOOLS:-"mediafetch-nosync mediafetch-durable curl wget"}
WGET_MAX=${WGET_MAX:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$ROOT/.build/bench-cache}

unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

for tool in nginx curl wget /usr/bin/time python3; do
    command -v "$tool" > /dev/null || { echo "missing: $tool (apt-get install nginx-light curl wget time)" >&2; exit 2; }
done

source "$ROOT/Benchmarks/common.sh"
ensure_mediafetch

# small_tree COUNT KB: COUNT files of KB KiB under $CACHE/small-KB/dNNN/fNNNNNNN.bin (1,000 a folder), generated
# once and grown when a larger count is asked for; prints the tree's path.
small_tree() {
    local count=$1 kb=$2 tree="$CACHE/small-$2"
    local have=0
    [[ -f "$tree/.count" ]] && have=$(cat "$tree/.count")
    if (( have < count )); then
        echo "generating files $have..$count of $kb KiB in $tree..." >&2
        mkdir -p "$tree"
        python3 - "$tree" "$have" "$count" "$kb" <<'PY'
import os, sys
tree, start, count, kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
block = os.urandom(kb * 1024 + 4096)
for index in range(start, count):
    folder = f"{tree}/d{index // 1000:04d}"
    if index % 1000 == 0 or index == start:
        os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/f{index:07d}.bin", "wb") as out:
        # Each file differs: a window of the block, moved by the index.
        offset = index % 4096
        out.write(block[offset:offset + kb * 1024])
PY
        echo "$count" > "$tree/.count"
    fi
    echo "$tree"
}

WORK=$(mktemp -d /tmp/mediafetch-million.XXXXXX)
OUT=$WORK/out
FRESH=$WORK/fresh
[[ -n "${FRESH_FS:-}" ]] && OUT=$FRESH/out
NGINX_PID=""
cleanup() {
    stop_postgres
    stop_process "$NGINX_PID"
    mountpoint -q "$FRESH" 2> /dev/null && umount "$FRESH"
    rm -rf "$WORK"
}

# FRESH_FS: every run writes into an ext4 made for it (a sparse image on a loop device, as root), so that no run
# allocates inodes among the ones the previous run's files freed. On an ext4 without a journal, like this
# machine's disk, the allocator skips every inode freed in the last minutes and reads the inode table to do so:
# whichever tool follows a deletion pays for it.
fresh_filesystem() { # COUNT
    mountpoint -q "$FRESH" && umount "$FRESH"
    rm -f "$WORK/fresh.img" && mkdir -p "$FRESH"
    truncate -s 8G "$WORK/fresh.img"
    mkfs.ext4 -q -F -N $(( $1 + 10000 )) "$WORK/fresh.img"
    mount -o loop "$WORK/fresh.img" "$FRESH"
}
trap cleanup EXIT

LEDGER=""
if [[ " $TOOLS " == *" mediafetch-shared "* ]]; then
    [[ -x "$PGBIN/initdb" ]] || { echo "missing: $PGBIN/initdb (apt-get install postgresql)" >&2; exit 2; }
    start_postgres
fi

PORT=$(free_port)
mkdir -p "$CACHE"
SCHEME=http LISTEN="listen 127.0.0.1:$PORT;" CA=""
if [[ -n "${TLS:-}" ]]; then
    [[ $SERVER == nginx ]] || { echo "TLS is for SERVER=nginx only" >&2; exit 2; }
    command -v openssl > /dev/null || { echo "missing: openssl (apt-get install openssl)" >&2; exit 2; }
    CA=$WORK/cert.pem
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$CA" -days 2 -subj "/CN=127.0.0.1" \
        -addext "subjectAltName=IP:127.0.0.1" 2> /dev/null
    SCHEME=https
    LISTEN="listen 127.0.0.1:$PORT ssl http2; ssl_certificate $CA; ssl_certificate_key $WORK/key.pem;"
fi
case $SERVER in
    nginx)
        # Buffered, so that logging costs the server little; flushed when nginx stops or the buffer fills.
        start_nginx "log_format count '\$status'; access_log $WORK/nginx/access.log count buffer=64k flush=1s;" \
            "$LISTEN root $CACHE;"
        ;;
    nginx-debian)
        # nginx as Debian configures it (/etc/nginx/nginx.conf): a worker a core, 768 connections a worker, every
        # request logged unbuffered, a connection closed after 1,000 requests (nginx's default), gzip on. Only where
        # its files go changes (pid, logs, temporary files, all under $WORK), and its one site is ours: the sites and
        # conf.d folders are left out.
        [[ -f /etc/nginx/nginx.conf ]] \
            || { echo "missing: /etc/nginx/nginx.conf (apt-get install nginx-common)" >&2; exit 2; }
        mkdir -p "$WORK/nginx/tmp"
        temp_paths=""
        for kind in client_body proxy fastcgi uwsgi scgi; do
            temp_paths+="${kind}_temp_path $WORK/nginx/tmp/$kind; "
        done
        sed -e "s#^\s*pid .*#pid $WORK/nginx/nginx.pid;#" -e "s#^\s*error_log .*#error_log $WORK/nginx/error.log;#" \
            -e "s#access_log /var/log/nginx/access.log;#access_log $WORK/nginx/access.log;#" \
            -e "s#include /etc/nginx/conf.d/\*.conf;##" \
            -e "s#include /etc/nginx/sites-enabled/\*;#${temp_paths}server { listen 127.0.0.1:$PORT; root $CACHE; }#" \
            /etc/nginx/nginx.conf > "$WORK/nginx/nginx.conf"
        for line in "pid $WORK/nginx/nginx.pid;" "error_log $WORK/nginx/error.log;" \
            "access_log $WORK/nginx/access.log;" "listen 127.0.0.1:$PORT;"; do
            grep -qF "$line" "$WORK/nginx/nginx.conf" \
                || { echo "/etc/nginx/nginx.conf is not as Debian ships it (no place for: $line)" >&2; exit 2; }
        done
        if [[ $(id -u) -eq 0 ]]; then
            # Its workers run as www-data: they must reach the files, and write nothing of ours but through root's
            # descriptors.
            chmod 755 "$WORK"
            runuser -u www-data -- test -x "$CACHE" -a -r "$CACHE" || {
                echo "www-data cannot read $CACHE (nginx-debian's workers run as www-data): set CACHE" >&2
                exit 2
            }
        fi
        nginx -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" -g 'daemon off;' &
        NGINX_PID=$!
        ;;
    python)
        # The server a person starts in a folder to share it, unchanged: a thread and a connection a request.
        python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$CACHE" > /dev/null 2> "$WORK/python.log" &
        NGINX_PID=$!   # start_nginx's name for the server's process, which cleanup stops
        ;;
    *) echo "SERVER must be nginx, nginx-debian or python, not $SERVER" >&2; exit 2 ;;
esac
for _ in $(seq 100); do
    curl -s --noproxy '*' ${CA:+--cacert "$CA"} -o /dev/null "$SCHEME://127.0.0.1:$PORT/" && break
    sleep 0.1
done
BASE="$SCHEME://127.0.0.1:$PORT"

requests() { # how many requests the server has logged so far (waits out nginx's one-second log flush)
    if [[ $SERVER == python ]]; then
        grep -c '"GET ' "$WORK/python.log" || true
        return
    fi
    sleep 1.2
    wc -l < "$WORK/nginx/access.log"
}

mediafetch_config() { # LIST SYNC [LEDGER] -> config path
    cat > "$WORK/mediafetch-$2.yaml" <<YAML
${3:+ledger: $3}
${3:+name: shared-$(date +%s%N)}
source:
  use: urls
  file: $1
transport:
  use: curl
  concurrency: $CONCURRENCY
${CA:+  ca-file: $CA}
sink:
  use: directory
  path: $OUT
  layout: "{title}.{ext}"
  sync: $2
state: $OUT.state
YAML
    echo "$WORK/mediafetch-$2.yaml"
}

command_for() { # TOOL LIST -> the command line, one word per line
    case $1 in
        mediafetch-nosync) printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" false)" --quiet ;;
        mediafetch-durable) printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" true)" --quiet ;;
        mediafetch-shared)
            # Each run a run of its own name (mediafetch_config's), so that none finds the last one's rows.
            printf '%s\n' "$MEDIAFETCH" run "$(mediafetch_config "$2" false "$LEDGER")" --quiet --worker w1 ;;
        curl | curl-sync)
            # The certificate to trust, before the first URL: an option for every transfer.
            { [[ -n $CA ]] && echo "cacert = \"$CA\""
              awk '{ n = split($0, p, "/"); printf "url = \"%s\"\noutput = \"%s\"\n", $0, p[n] }' "$2"; } > "$2.curl"
            if [[ $1 == curl ]]; then
                printf '%s\n' curl -s -S --noproxy '*' -Z --parallel-max "$CONCURRENCY" --config "$2.curl"
            else
                # curl, then its files written to the disk: what the durable default does, done the blunt way.
                printf '%s\n' sh -c 'curl -s -S --noproxy "*" -Z --parallel-max "$1" --config "$2" && sync -f .' \
                    curl-sync "$CONCURRENCY" "$2.curl"
            fi ;;
        wget) printf '%s\n' wget -q --no-proxy ${CA:+"--ca-certificate=$CA"} -i "$2" -P "$OUT" ;;
    esac
}

# run_one TOOL LIST COUNT BYTES: empties $OUT, runs the tool there, checks the files, prints "wall rss_kb cpu"
# (cpu: user + system seconds, which hold stiller than walls on a shared machine).
run_one() {
    local tool=$1 list=$2 count=$3 bytes=$4 command=()
    [[ -n "${FRESH_FS:-}" ]] && fresh_filesystem "$count"
    rm -rf "$OUT" "$OUT.state" && mkdir -p "$OUT"
    sync
    mapfile -t command < <(command_for "$tool" "$list")
    local status=0
    (cd "$OUT" && /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "${command[@]}" > "$WORK/$tool.log" 2>&1) \
        || status=$?
    local got files
    read -r files got < <(find "$OUT" -type f -printf '%s\n' | awk '{ s += $1 } END { print NR, s + 0 }')
    if [[ $status -ne 0 || "$got" != "$bytes" || "$files" != "$count" ]]; then
        echo "  $tool failed (exit $status, $files files, $got bytes); see its log:" >&2
        tail -5 "$WORK/$tool.log" >&2
        echo "FAIL FAIL FAIL"
        return
    fi
    awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$WORK/time.txt"
}

median() {
    sort -n | awk '$1 == "FAIL" { failed = 1 } { v[NR] = $1 }
        END { if (NR == 0 || failed) print "FAIL"; else print v[int((NR + 1) / 2)] }'
}

printf '%-22s %-20s %9s %10s %9s %8s\n' "items" "tool" "wall s" "peak MiB" "vs curl" "cpu s"
for row in $ROWS; do
    count=${row%x*} kb=${row#*x}
    tree=$(small_tree "$count" "$kb")
    list="$WORK/urls-$row.txt"
    awk -v n="$count" -v base="$BASE/small-$kb" \
        'BEGIN { for (i = 0; i < n; i++) printf "%s/d%04d/f%07d.bin\n", base, int(i / 1000), i }' > "$list"
    bytes=$(( count * kb * 1024 ))
    declare -A walls=() rss=() cpus=()
    rerun=""
    for round in $(seq "$RUNS"); do
        for tool in $TOOLS; do
            [[ $tool == wget ]] && (( count > WGET_MAX )) && continue
            read -r wall kb_rss cpu < <(run_one "$tool" "$list" "$count" "$bytes")
            walls[$tool]+="$wall"$'\n'
            rss[$tool]+="$kb_rss"$'\n'
            cpus[$tool]+="$cpu"$'\n'
            # The re-run, over what the last round's mediafetch-nosync stored: no request may reach the server.
            if [[ $tool == mediafetch-nosync && $round == "$RUNS" && $wall != FAIL && ${RERUN:-1} != 0 ]]; then
                before=$(requests)
                (cd "$OUT" && /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$MEDIAFETCH" run \
                    "$(mediafetch_config "$list" false)" --quiet > "$WORK/rerun.log" 2>&1) \
                    || { echo "  the re-run failed:" >&2; tail -5 "$WORK/rerun.log" >&2; }
                after=$(requests)
                read -r rwall rkb < "$WORK/time.txt"
                rerun=$(printf '%-22s %-20s %9s %10s %9s  (%d requests; %s)' "$count x $kb KiB" "mediafetch re-run" \
                    "$rwall" "$(awk -v k="$rkb" 'BEGIN { printf "%.1f", k / 1024 }')" "-" "$(( after - before ))" \
                    "$(tail -1 "$WORK/rerun.log")")
            fi
        done
    done
    curl_wall=$(printf '%s' "${walls[curl]:-}" | median)
    for tool in $TOOLS; do
        [[ -z "${walls[$tool]:-}" ]] && continue
        wall=$(printf '%s' "${walls[$tool]}" | median)
        peak=$(printf '%s' "${rss[$tool]}" | median)
        ratio=$(ratio "$wall" "$curl_wall")
        mib=$(awk -v k="$peak" 'BEGIN { if (k == "FAIL") print "FAIL"; else printf "%.1f", k / 1024 }')
        cpu=$(printf '%s' "${cpus[$tool]}" | median)
        printf '%-22s %-20s %9s %10s %9s %8s\n' "$count x $kb KiB" "$tool" "$wall" "$mib" "$ratio" "$cpu"
    done
    [[ -n $rerun ]] && echo "$rerun"
    unset walls rss cpus
    rm -rf "$OUT" "$OUT.state"
done
