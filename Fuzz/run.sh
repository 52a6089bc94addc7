#!/usr/bin/env bash
# Builds the libFuzzer targets against instrumented builds of the library modules and runs each for a
# bounded time over its committed corpus (new finds go to a scratch folder, not into git).
#   Fuzz/run.sh [SECONDS_PER_TARGET]      (default 25; CI runs it with a minute in all)
# A crash leaves its input in .build/fuzz/ and exits non-zero: add the input to the target's corpus
# and a regression test beside the code it broke.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-25}"
build=.build/fuzz
swift build --sanitize fuzzer --sanitize address --build-path "$build" --target ITunesSource >/dev/null

modules=(-I "$build/debug/Modules")
for map in Sources/C*/module.modulemap; do modules+=(-Xcc "-fmodule-map-file=$map"); done
libraries=(-lyaml -lcrypto -lsqlite3)

link() { # name, sources..., object folders...
    local name="$1"; shift
    swiftc -sanitize=fuzzer,address -parse-as-library -module-name "$name" "$@" "${modules[@]}" "${libraries[@]}" \
        -o "$build/$name" 2>&1 | grep -v "Cannot export local symbol" || true
}
link ConfigLoaderFuzzer Fuzz/ConfigLoaderFuzzer.swift Fuzz/FuzzRegistry.swift "$build"/debug/MediaFetchCore.build/*.o
link SearchDecoderFuzzer Fuzz/SearchDecoderFuzzer.swift "$build"/debug/MediaFetchCore.build/*.o \
    "$build"/debug/ITunesSource.build/*.o

status=0
for name in ConfigLoaderFuzzer SearchDecoderFuzzer; do
    scratch="$build/corpus-$name"
    mkdir -p "$scratch"
    echo "== $name: ${seconds}s"
    if ! "$build/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$build/$name-" \
        "$scratch" "Fuzz/corpus/$name" 2>&1 | grep -E "^(Done|==|#[0-9]+ +DONE)|ERROR|SUMMARY|crash-"; then
        :
    fi
    if ls "$build/$name-"crash-* "$build/$name-"leak-* "$build/$name-"timeout-* >/dev/null 2>&1; then
        echo "$name found a failing input:" "$build/$name-"*; status=1
    fi
done
exit $status
