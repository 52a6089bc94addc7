#!/usr/bin/env bash
# Times `mediafetch run` with `use: podcast` against curl on a loopback nginx, and prints the figures beside
# curl's, as ratios:
#   1. 20 episodes of 100 MB from one feed: mediafetch (defaults, and sync: false) against curl -Z over the
#      enclosure URLs, and curl -Z then sync (the durability mediafetch gives by default);
#   2. the same run again over the unchanged feed: a conditional GET answered 304, nothing downloaded;
#   3. a feed of 5,000 episodes (about 9 MB) read whole, no episode taken (since: in the future): fetch and parse,
#      against curl fetching the same feed.
#
#   Benchmarks/podcast.sh                    # median of 5 rounds
#   RUNS=1 EPISODES=4 Benchmarks/podcast.sh  # quicker
#
# Environment: RUNS (default 5), EPISODES (default 20), EPISODE_MB (default 100), CONCURRENCY (default 8),
# BIG_FEED (episodes in the big feed, default 5000), CACHE (where files are generated once, default
# .build/bench-cache), MEDIAFETCH (a prebuilt binary; default: swift build -c release). Needs nginx (nginx-light),
# curl, python3 and /usr/bin/time; when hyperfine is installed, the big feed is also timed with it.
set -euo pipefail

RUNS=${RUNS:-5}
EPISODES=${EPISODES:-20}
EPISODE_MB=${EPISODE_MB:-100}
CONCURRENCY=${CONCURRENCY:-8}
BIG_FEED=${BIG_FEED:-5000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${CACHE:-$ROOT/.build/bench-cache}

# Only loopback: no proxy may redirect a request elsewhere.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

for tool in nginx curl /usr/bin/time python3; do
    command -v "$tool" > /dev/null || { echo "missing: $tool (apt-get install nginx-light curl time python3)" >&2; exit 2; }
done

source "$ROOT/Benchmarks/common.sh"
ensure_mediafetch

# --- the episodes, generated once ------------------------------------------------------------------
TREE="$CACHE/podcast"
if [[ ! -f "$TREE/.complete-$EPISODES-$EPISODE_MB" ]]; then
    echo "generating $EPISODES episodes of $EPISODE_MB MB in $TREE..." >&2
    rm -rf "$TREE" && mkdir -p "$TREE/media"
    for index in $(seq 1 "$EPISODES"); do
        head -c $((EPISODE_MB * 1000 * 1000)) /dev/urandom > "$TREE/media/$(printf 'episode-%02d.mp3' "$index")"
    done
    touch "$TREE/.complete-$EPISODES-$EPISODE_MB"
    sync
fi

make_work podcast-bench
OUT=$WORK/out

PORT=$(free_port)
BASE="http://127.0.0.1:$PORT"
mkdir -p "$WORK/nginx/tmp" "$WORK/www"
ln -s "$TREE/media" "$WORK/www/media"

# The feeds: one of the episodes, and one of BIG_FEED episodes shaped like a real host's (show notes, iTunes
# tags), all with enclosures on this server.
python3 - "$WORK/www" "$BASE" "$EPISODES" "$EPISODE_MB" "$BIG_FEED" <<'PY'
import sys, email.utils
root, base, count, megabytes, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def feed(items):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0" '
        'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" '
        'xmlns:podcast="https://podcastindex.org/namespace/1.0" '
        'xmlns:content="http://purl.org/rss/1.0/modules/content/">\n<channel>\n<title>Bench Show</title>\n'
        '<itunes:author>Bench</itunes:author><itunes:image href="' + base + '/cover.jpg"/>\n' + items
        + '</channel>\n</rss>\n')
def item(n, url, length, day):
    date = email.utils.formatdate(1700000000 - day * 86400, usegmt=True)
    notes = ("<p>Show notes for episode %d: guests, links, chapters and sponsors. " % n) * 6 + "</p>"
    return ('<item><title>Episode %d: a title of usual length</title><guid isPermaLink="false">ep-%06d</guid>'
        '<pubDate>%s</pubDate><description><![CDATA[%s]]></description>'
        '<content:encoded><![CDATA[%s]]></content:encoded>'
        '<enclosure url="%s" length="%d" type="audio/mpeg"/><itunes:duration>01:%02d:%02d</itunes:duration>'
        '<itunes:episode>%d</itunes:episode><itunes:season>1</itunes:season>'
        '<itunes:explicit>false</itunes:explicit></item>\n' % (n, n, date, notes, notes, url, length, n % 60,
            n % 60, n))
with open(root + "/feed.xml", "w") as out:
    out.write(feed("".join(item(n, "%s/media/episode-%02d.mp3" % (base, n), megabytes * 10**6, n)
        for n in range(1, count + 1))))
with open(root + "/feed-big.xml", "w") as out:
    out.write(feed("".join(item(n, "%s/media/episode-%02d.mp3" % (base, 1 + n % count), megabytes * 10**6, n)
        for n in range(1, big + 1))))
with open(root + "/urls.txt", "w") as out:
    for n in range(1, count + 1):
        out.write('url = "%s/media/episode-%02d.mp3"\noutput = "episode-%02d.mp3"\n' % (base, n, n))
PY

start_nginx "access_log $WORK/nginx/access.log; types { application/rss+xml xml; audio/mpeg mp3; }" \
    "listen 127.0.0.1:$PORT; root $WORK/www; disable_symlinks off;"
for _ in $(seq 100); do curl -s --noproxy '*' -o /dev/null "$BASE/feed.xml" && break; sleep 0.1; done

config() { # NAME FEED SYNC EXTRA -> a podcast config writing into $OUT, state beside it
    cat > "$WORK/$1.yaml" <<YAML
source:
  use: podcast
  feeds: [$BASE/$2]
  max-episodes: $EPISODES
$4
transport:
  use: curl
  concurrency: $CONCURRENCY
sink:
  use: directory
  path: $OUT
  sync: $3
state: $OUT.state
YAML
    echo "$WORK/$1.yaml"
}
DEFAULTS=$(config defaults feed.xml true "")
NOSYNC=$(config nosync feed.xml false "")
BIG=$(config big feed-big.xml true "  since: 2100-01-01")
EXPECTED=$((EPISODES * EPISODE_MB * 1000 * 1000))

# timed KEEP COMMAND...: runs COMMAND in $OUT (emptied first unless KEEP is keep), prints "wall peak_kb bytes".
timed() {
    local keep=$1
    shift
    if [[ $keep != keep ]]; then rm -rf "$OUT" "$OUT.state"; fi
    mkdir -p "$OUT"
    sync
    (cd "$OUT" && /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" > "$WORK/last.log" 2>&1) \
        || { echo "failed: $*" >&2; tail -5 "$WORK/last.log" >&2; echo "FAIL FAIL 0"; return; }
    echo "$(cat "$WORK/time.txt") $(find "$OUT" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')"
}

median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "FAIL"; else print v[int((NR + 1) / 2)] }'; }

declare -A walls=() peaks=()
record() { # ROW "wall kb bytes" [EXPECTED_BYTES]
    read -r wall kb bytes <<< "$2"
    if [[ $wall == FAIL || (-n ${3:-} && $bytes != "$3") ]]; then
        echo "  $1: FAIL (exit or $bytes bytes of ${3:-?})" >&2
        wall=FAIL
    fi
    walls[$1]+="$wall "
    peaks[$1]+="$kb "
}

CURL=(curl -s -S --noproxy '*' -Z --parallel-max "$CONCURRENCY" --config "$WORK/www/urls.txt")
for round in $(seq "$RUNS"); do
    echo "round $round of $RUNS..." >&2
    record curl "$(timed fresh "${CURL[@]}")" "$EXPECTED"
    record curl+sync "$(timed fresh sh -c '"$@" && sync' sh "${CURL[@]}")" "$EXPECTED"
    record mediafetch "$(timed fresh "$MEDIAFETCH" run "$DEFAULTS" --quiet)" "$EXPECTED"
    # The same again over the unchanged feed: a 304, every episode already stored.
    before=$(grep -c ' 304 ' "$WORK/nginx/access.log" || true)
    record rerun "$(timed keep "$MEDIAFETCH" run "$DEFAULTS" --quiet)" "$EXPECTED"
    after=$(grep -c ' 304 ' "$WORK/nginx/access.log" || true)
    [[ $((after - before)) -eq 1 ]] || echo "  re-run: expected one 304, nginx logged $((after - before))" >&2
    record mediafetch-nosync "$(timed fresh "$MEDIAFETCH" run "$NOSYNC" --quiet)" "$EXPECTED"
    record curl-feed "$(timed fresh curl -s -S --noproxy '*' -o feed.xml "$BASE/feed-big.xml")"
    record big-feed "$(timed fresh "$MEDIAFETCH" run "$BIG" --quiet)" 0
done

row() { # LABEL KEY REFERENCE_KEY
    local wall peak ref ratio="-"
    wall=$(printf '%s\n' ${walls[$2]} | median)
    peak=$(printf '%s\n' ${peaks[$2]} | sort -n | tail -1)
    ref=$(printf '%s\n' ${walls[$3]} | median)
    [[ $wall != FAIL && $ref != FAIL ]] && ratio=$(awk -v a="$wall" -v r="$ref" 'BEGIN { printf "%.2fx", a / r }')
    printf '| %-52s | %8s | %10s | %8s |\n' "$1" "$wall" "$(awk -v k="$peak" 'BEGIN { printf "%.1f", k / 1024 }')" "$ratio"
}
feed_mb=$(stat -c %s "$WORK/www/feed-big.xml" | awk '{ printf "%.1f", $1 / 1e6 }')
echo
echo "## $EPISODES episodes of $EPISODE_MB MB, concurrency $CONCURRENCY, median of $RUNS (wall s, peak RSS MiB)"
printf '| %-52s | %8s | %10s | %8s |\n' "command" "wall (s)" "peak (MiB)" "vs curl"
printf '| %-52s | %8s | %10s | %8s |\n' "---" "---:" "---:" "---:"
row "curl -Z --parallel-max $CONCURRENCY" curl curl
row "curl -Z, then sync" curl+sync curl
row "mediafetch run, use: podcast (defaults: durable)" mediafetch curl
row "the same, directory sync: false" mediafetch-nosync curl
row "the same again, feed unchanged (one 304)" rerun curl
echo
echo "## a feed of $BIG_FEED episodes ($feed_mb MB): fetched and read whole, median of $RUNS"
printf '| %-52s | %8s | %10s | %8s |\n' "command" "wall (s)" "peak (MiB)" "vs curl"
printf '| %-52s | %8s | %10s | %8s |\n' "---" "---:" "---:" "---:"
row "curl -o (fetch only)" curl-feed curl-feed
row "mediafetch run, use: podcast (fetch, parse, keep)" big-feed curl-feed

if command -v hyperfine > /dev/null; then
    echo
    rm -rf "$OUT" "$OUT.state" && mkdir -p "$OUT"
    (cd "$OUT" && hyperfine -N --warmup 1 --runs "$RUNS" --prepare "rm -rf $OUT.state" \
        "curl -s --noproxy * -o /dev/null $BASE/feed-big.xml" "$MEDIAFETCH run $BIG --quiet" 2>&1 | sed 's/^/    /')
fi
