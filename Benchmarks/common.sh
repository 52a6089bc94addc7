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
