#!/bin/sh
# A mediafetch sink in plain POSIX sh and coreutils (Plugins/ExecPlugins/PROTOCOL.md): stores each file under the
# folder its `folder` option names, at the path mediafetch suggests, and answers with that path.
#
#   sink:
#     use: exec
#     command: [./dir-sink.sh]
#     options: {folder: previews}    # relative to the plugin's folder: the config's, unless directory: says
#
# Each file is moved in under a temporary name, flushed, and renamed into place, so a file is there whole or not at
# all. The paths mediafetch sends are safe already (no "..", no leading "/"); this checks again anyway. Symbolic
# links someone put inside the folder are followed: use the directory sink where that matters.

set -u
# Bytes, not characters: sed then passes any UTF-8 through untouched.
LC_ALL=C
export LC_ALL

soh=$(printf '\001')
stx=$(printf '\002')

# str LINE KEY: the string field KEY of the JSON line LINE, or nothing when it is not there.
# mediafetch writes no spaces between tokens and escapes only ", \ and control characters in strings, so a field
# is [{,]"KEY":"VALUE" where VALUE holds no bare ". The escapes \\ and \" are set aside as \001 and \002 (bytes
# mediafetch never writes raw) so that [^"]* finds the value's end, then put back as \ and ". Any other escape
# (\n, \t, \u0001) could only come from control characters, which no name here contains: it gives $soh.
str() {
    printf '%s\n' "$1" | sed -n "
s/\\\\\\\\/$soh/g
s/\\\\\"/$stx/g
t reset
:reset
s/.*[{,]\"$2\":\"\\([^\"]*\\)\".*/\\1/
t found
b
:found
s/\\\\\\//\\//g
/\\\\/{
s/.*/$soh/
p
d
}
s/$stx/\"/g
s/$soh/\\\\/g
p"
}

# num LINE KEY: the whole-number field KEY, or nothing. A " inside a string is always escaped as \", so
# [{,]"KEY": cannot match inside one.
num() {
    printf '%s\n' "$1" | sed -n "s/.*[{,]\"$2\":\\([0-9][0-9]*\\).*/\\1/p"
}

# json TEXT: TEXT escaped for a JSON string (its \ and "; the paths answered here hold no control characters).
json() {
    printf '%s\n' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'
}

# fail ID MESSAGE: the request ID could not be done; mediafetch fails its item with MESSAGE.
fail() {
    printf '{"type":"error","id":%s,"message":"%s"}\n' "$1" "$(json "$2")"
}

IFS= read -r hello || exit 1
protocol=$(num "$hello" protocol)
oldest=$(num "$hello" minProtocol)
if [ -z "$protocol" ] || [ "$protocol" -lt 1 ] || [ "${oldest:-1}" -gt 1 ]; then
    printf '{"type":"error","message":"dir-sink.sh speaks protocol 1 only"}\n'
    exit 1
fi
# The hello's only nested object is "options"; its keys are this plugin's own, so "folder" is found in it.
folder=$(str "$hello" folder)
if [ -z "$folder" ] || [ "$folder" = "$soh" ]; then
    printf '{"type":"error","message":"the folder option is missing: options: {folder: previews}"}\n'
    exit 1
fi
if ! mkdir -p -- "$folder"; then
    printf '{"type":"error","message":"cannot create the folder %s"}\n' "$(json "$folder")"
    exit 1
fi
printf '{"type":"hello","protocol":1}\n'

while IFS= read -r line; do
    type=$(str "$line" type)
    id=$(num "$line" id)
    path=$(str "$line" path)
    case $path in
    "$soh" | /* | ../* | */../* | */.. | ..)
        fail "$id" "refusing the path $path"
        continue
        ;;
    esac
    case $type in
    plan)
        printf '{"type":"planned","id":%s,"path":"%s"}\n' "$id" "$(json "$(str "$line" suggested)")"
        ;;
    store)
        file=$(str "$line" file)
        target="$folder/$path"
        part="$target.part-$$"
        # sync FILE (coreutils) flushes the bytes before the rename, so a power cut cannot leave an empty file.
        if mkdir -p -- "$(dirname -- "$target")" && mv -f -- "$file" "$part" && sync -- "$part" &&
            mv -f -- "$part" "$target"; then
            printf '{"type":"stored","id":%s,"location":"%s"}\n' "$id" "$(json "$path")"
        else
            rm -f -- "$part"
            fail "$id" "cannot store $path in $folder"
        fi
        ;;
    keep)
        # Still there, at the recorded size: an earlier run's file is kept, anything else is fetched again.
        size=$(num "$line" size)
        if [ -f "$folder/$path" ] && [ "$(($(wc -c <"$folder/$path")))" = "$size" ]; then
            printf '{"type":"kept","id":%s,"keep":true}\n' "$id"
        else
            printf '{"type":"kept","id":%s,"keep":false}\n' "$id"
        fi
        ;;
    finish)
        printf '{"type":"finished","id":%s}\n' "$id"
        ;;
    *)
        fail "$id" "dir-sink.sh does not know the request $type"
        ;;
    esac
done
exit 0
