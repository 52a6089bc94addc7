#!/usr/bin/env bash
# A URL list whose files are all missing (every request a 404 with nginx's small error page): wall time, CPU, peak
# memory and the connections the server saw, for `mediafetch run` (urls source, curl transport, `sync: false`) beside
# `curl -Z --fail` (which, like mediafetch, keeps no file for a failed download) and plain `curl -Z` (which stores
# each error page as a file), all with 16 transfers at once against one nginx on 127.0.0.1. A list of dead links is
# where a client that drops the connection after each error pays a connection (over TLS, a handshake) a link.
#
#   Benchmarks/missing.sh                  # 100,000 missing files, 3 rounds
#   COUNT=20000 RUNS=1 Benchmarks/missing.sh
#   TLS=1 COUNT=20000 Benchmarks/missing.sh    # over https (a certificate made for the run): a handshake a connection
#
# Environment: COUNT (default 100000), RUNS (rounds, default 3; medians are printed; each round runs every tool once,
# in turn), TLS (set: nginx serves https with a self-signed certificate that the clients are told to trust; needs
# openssl), MEDIAFETCH (a prebuilt binary; default: swift build -c release).
set -euo pipefail

COUNT=${COUNT:-100000}
RUNS=${RUNS:-3}
[[ $COUNT =~ ^[1-9][0-9]*$ && $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "COUNT and RUNS must be counts" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)

unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

for tool in nginx curl /usr/bin/time python3 ${TLS:+openssl}; do
    command -v "$tool" > /dev/null \
        || { echo "missing: $tool (apt-get install nginx-light curl time openssl)" >&2; exit 2; }
done

source "$ROOT/Benchmarks/common.sh"
ensure_mediafetch

make_work missing

PORT=$(free_port)
mkdir -p "$WORK/www"
SCHEME=http LISTEN="listen 127.0.0.1:$PORT;" TRUST=() CA_LINE=""
if [[ -n "${TLS:-}" ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" -out "$WORK/cert.pem" -days 2 \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" 2> /dev/null
    SCHEME=https TRUST=(--cacert "$WORK/cert.pem") CA_LINE="  ca-file: $WORK/cert.pem"
    LISTEN="listen 127.0.0.1:$PORT ssl; ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;"
fi
# Each request's connection number, so that the connections a run opened can be counted.
start_nginx "log_format conn '\$connection'; access_log $WORK/nginx/access.log conn buffer=64k flush=1s;" \
    "$LISTEN root $WORK/www;"
for _ in $(seq 100); do
    curl -s --noproxy '*' "${TRUST[@]}" -o /dev/null "$SCHEME://127.0.0.1:$PORT/" && break
    sleep 0.1
done

LIST=$WORK/urls.txt
awk -v n="$COUNT" -v base="$SCHEME://127.0.0.1:$PORT/missing" \
    'BEGIN { for (i = 0; i < n; i++) printf "%s/d%04d/f%07d.bin\n", base, int(i / 1000), i }' > "$LIST"
awk '{ n = split($0, p, "/"); printf "url = \"%s\"\noutput = \"%s\"\n", $0, p[n] }' "$LIST" > "$LIST.curl"
cat > "$WORK/mediafetch.yaml" <<YAML
source:
  use: urls
  file: $LIST
transport:
  use: curl
  concurrency: 16
$CA_LINE
sink:
  use: directory
  path: $WORK/out
  layout: "{title}.{ext}"
  sync: false
state: $WORK/out.state
YAML

command_for() { # TOOL -> the command line, one word per line
    case $1 in
        mediafetch) printf '%s\n' "$MEDIAFETCH" run "$WORK/mediafetch.yaml" --quiet ;;
        curl-fail)
            printf '%s\n' curl -s --noproxy '*' "${TRUST[@]}" --fail -Z --parallel-max 16 --config "$LIST.curl" ;;
        curl) printf '%s\n' curl -s --noproxy '*' "${TRUST[@]}" -Z --parallel-max 16 --config "$LIST.curl" ;;
    esac
}

# connections: how many connections the server logged requests on so far (waits out the log's one-second flush).
connections() {
    sleep 1.2
    sort -u "$WORK/nginx/access.log" | wc -l
}

# ended_as_expected TOOL STATUS: whether the tool ended as it should when every download fails: mediafetch with 1
# and every item failed, curl --fail with 22, plain curl with 0 (it stores the error pages).
ended_as_expected() {
    case $1 in
        mediafetch) [[ $2 -eq 1 ]] && grep -q "^0 stored, $COUNT failed" "$WORK/$1.log" ;;
        curl-fail) [[ $2 -eq 22 ]] ;;
        curl) [[ $2 -eq 0 ]] ;;
    esac
}

# run_one TOOL: runs it in an empty folder; prints "wall rss_kb cpu connections requests", or FAIL five times when it
# did not end as it should or the server's log does not show each URL asked for once.
run_one() {
    local command=() before_connections before_lines after_connections after_lines status=0
    rm -rf "$WORK/out" "$WORK/out.state" && mkdir -p "$WORK/out"
    before_connections=$(connections)
    before_lines=$(wc -l < "$WORK/nginx/access.log")
    mapfile -t command < <(command_for "$1")
    (cd "$WORK/out" && /usr/bin/time -f "%e %M %U %S" -o "$WORK/time.txt" "${command[@]}" > "$WORK/$1.log" 2>&1) \
        || status=$?
    after_connections=$(connections)
    after_lines=$(wc -l < "$WORK/nginx/access.log")
    if ! ended_as_expected "$1" "$status" || (( after_lines - before_lines != COUNT )); then
        echo "  $1 failed (exit $status, $(( after_lines - before_lines )) requests for $COUNT URLs); its log:" >&2
        tail -5 "$WORK/$1.log" >&2
        echo "FAIL FAIL FAIL FAIL FAIL"
        return
    fi
    awk -v c=$(( after_connections - before_connections )) -v r=$(( after_lines - before_lines )) \
        'END { printf "%s %s %.2f %d %d\n", $1, $2, $3 + $4, c, r }' "$WORK/time.txt"
}

median() {
    sort -n | awk '$1 == "FAIL" { failed = 1 } { v[NR] = $1 } END { print failed ? "FAIL" : v[int((NR + 1) / 2)] }'
}

TOOLS="mediafetch curl-fail curl"
declare -A walls=() rss=() cpus=() conns=() asked=()
for _ in $(seq "$RUNS"); do
    for tool in $TOOLS; do
        read -r wall kb cpu opened requests < <(run_one "$tool")
        walls[$tool]+="$wall"$'\n'
        rss[$tool]+="$kb"$'\n'
        cpus[$tool]+="$cpu"$'\n'
        conns[$tool]+="$opened"$'\n'
        asked[$tool]+="$requests"$'\n'
    done
done

printf '%-12s %-16s %9s %10s %14s %8s %12s %9s\n' "missing" "tool" "wall s" "peak MiB" "vs curl -f" "cpu s" \
    "connections" "requests"
base=$(printf '%s' "${walls[curl-fail]}" | median)
for tool in $TOOLS; do
    wall=$(printf '%s' "${walls[$tool]}" | median)
    if [[ $wall == FAIL ]]; then
        printf '%-12s %-16s %9s\n' "$COUNT" "$tool" FAIL
        continue
    fi
    printf '%-12s %-16s %9s %10s %14s %8s %12s %9s\n' "$COUNT" "$tool" "$wall" \
        "$(printf '%s' "${rss[$tool]}" | median | awk '{ printf "%.1f", $1 / 1024 }')" \
        "$(ratio "$wall" "$base")" \
        "$(printf '%s' "${cpus[$tool]}" | median)" "$(printf '%s' "${conns[$tool]}" | median)" \
        "$(printf '%s' "${asked[$tool]}" | median)"
done
