# Sourced by the benchmark scripts: what more than one of them needs. Expects ROOT (the repository) and, for
# make_tree, CACHE, N and BIG_MIB.

# MEDIAFETCH, the static release build of the tool, built unless the caller names one.
ensure_mediafetch() {
    if [[ -z "${MEDIAFETCH:-}" ]]; then
        echo "building mediafetch (release)..." >&2
        (cd "$ROOT" && swift build -c release --static-swift-stdlib --product mediafetch >&2)
        MEDIAFETCH="$(cd "$ROOT" && swift build -c release --show-bin-path)/mediafetch"
    fi
}

# TREE: N preview-sized files (300 KB-1.2 MB) and one BIG_MIB MiB file under $CACHE/tree, generated once. (Not
# indented: the Python below is a here-document.)
make_tree() {
TREE="$CACHE/tree"
if [[ ! -f "$TREE/.complete-$N-$BIG_MIB" ]]; then
    echo "generating $N files of 300 KB-1.2 MB and one $BIG_MIB MiB file in $TREE..." >&2
    rm -rf "$TREE" && mkdir -p "$TREE/files"
    python3 - "$TREE" "$N" "$BIG_MIB" <<'PY'
import os, random, sys
tree, count, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20261129)  # fixed seed: the same sizes on every machine
for index in range(count):
    with open(f"{tree}/files/f{index:05d}.m4a", "wb") as out:
        out.write(os.urandom(rng.randint(300_000, 1_200_000)))
with open(f"{tree}/big.bin", "wb") as out:
    for _ in range(big):
        out.write(os.urandom(1 << 20))
PY
    touch "$TREE/.complete-$N-$BIG_MIB"
    sync
fi
}

# stop_process PID...: stops each (SIGTERM) and waits for it, whatever it exits with: a server that the signal ends
# exits non-zero (Python's with 143), and under `set -e` a cleanup that let that through stopped there, leaving its
# folder (and a fresh filesystem mounted) behind. An empty PID is skipped.
stop_process() {
    local pid
    for pid in "$@"; do
        [[ -n $pid ]] || continue
        kill "$pid" 2> /dev/null || true
        wait "$pid" 2> /dev/null || true
    done
}

# make_work NAME: WORK, a new folder /tmp/mediafetch-NAME.XXXXXX, removed when the script exits, after the server it
# started (NGINX_PID, empty until then) is stopped. For scripts that need nothing else undone.
make_work() {
    WORK=$(mktemp -d "/tmp/mediafetch-$1.XXXXXX")
    NGINX_PID=""
    trap 'stop_process "$NGINX_PID"; rm -rf "$WORK"' EXIT
}

# ratio A B: A over B as "1.23x", or "-" when either is FAIL or B is 0 (a figure beside a baseline that failed).
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "FAIL" || b == "FAIL" || b == 0) print "-"; else printf "%.2fx", a / b }'
}

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# A throwaway PostgreSQL 15 cluster (Debian's postgresql) under $WORK/pg on a free loopback port, fsync off.
# PostgreSQL refuses root: the cluster belongs to the postgres user then (Debian's package makes it).
PGBIN=/usr/lib/postgresql/15/bin
PG_AS=()
[[ $(id -u) -eq 0 ]] && PG_AS=(setpriv --reuid=postgres --regid=postgres --clear-groups --)

# start_postgres [SETTING...]: starts the cluster (each SETTING a `-c name=value` of its own, like
# max_connections=200) and sets LEDGER to its URI; stop_postgres, in the caller's cleanup, stops it.
start_postgres() {
    local settings="" setting
    for setting in "$@"; do settings+=" -c $setting"; done
    PG_PORT=$(free_port)
    mkdir -p "$WORK/pg"
    chmod 755 "$WORK"
    [[ ${#PG_AS[@]} -gt 0 ]] && chown postgres "$WORK/pg"
    (cd "$WORK/pg" && "${PG_AS[@]}" "$PGBIN/initdb" -D "$WORK/pg/data" -U postgres -A trust --no-sync -E UTF8 \
        --locale=C.UTF-8 > "$WORK/pg/initdb.log")
    (cd "$WORK/pg" && "${PG_AS[@]}" "$PGBIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/server.log" -w \
        -o "-k $WORK/pg -c listen_addresses=127.0.0.1 -p $PG_PORT -c fsync=off$settings" start > /dev/null)
    LEDGER="postgresql://postgres@127.0.0.1:$PG_PORT/postgres"
}

stop_postgres() {
    [[ -f "$WORK/pg/data/postmaster.pid" ]] || return 0
    "${PG_AS[@]}" "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m immediate -w stop > /dev/null
}

# start_nginx HTTP_LINES SERVER...: an nginx of the benchmark's own, started in the background (NGINX_PID): one
# worker, no daemon, its files under $WORK/nginx, HTTP_LINES added to its http block (access_log, types), and one
# `server { SERVER }` for each SERVER (what goes inside the braces). The caller waits until it answers.
start_nginx() {
    local http_lines=$1 server
    shift
    mkdir -p "$WORK/nginx/tmp"
    {
        cat <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 4096; }
http {
    $http_lines
    sendfile on;
    tcp_nopush on;
    keepalive_requests 10000000;
    default_type application/octet-stream;
    client_body_temp_path $WORK/nginx/tmp/body;
    proxy_temp_path $WORK/nginx/tmp/proxy;
    fastcgi_temp_path $WORK/nginx/tmp/fastcgi;
    uwsgi_temp_path $WORK/nginx/tmp/uwsgi;
    scgi_temp_path $WORK/nginx/tmp/scgi;
CONF
        for server in "$@"; do echo "    server { $server }"; done
        echo "}"
    } > "$WORK/nginx/nginx.conf"
    nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" &
    NGINX_PID=$!
}
