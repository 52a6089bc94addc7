#!/usr/bin/env python3
"""A mediafetch source: reads a CSV file and writes one item per row (Plugins/ExecPlugins/PROTOCOL.md).

Options (the `options:` mapping of the config's source section):
  file       the CSV file, relative to the plugin's folder (the config's, unless `directory:` says otherwise)
  delimiter  the field separator, "," unless given

The first row names the columns. The ones this reads are the protocol's item fields: id, title, artist, album,
genre, kind, trackNumber, discNumber, durationMillis, releaseDate, previewUrl, artworkUrl; other columns are
sent too and end up in the item's raw record. A row without an id or a title, or with a URL that is not http or
https, is reported as a failure naming its row; a row without a previewUrl is skipped.
"""

import csv
import json
import sys

PROTOCOL = 1
INTEGER_FIELDS = ("trackNumber", "discNumber", "durationMillis")
URL_FIELDS = ("previewUrl", "artworkUrl")


def send(message):
    # One object a line, flushed at once: mediafetch reads line by line and waits for each answer.
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text):
    # stderr reaches the user as "[csv-source.py] text".
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def main():
    hello = json.loads(sys.stdin.readline() or "null")
    if not isinstance(hello, dict) or hello.get("type") != "hello":
        send({"type": "error", "message": "expected a hello line first"})
        return 1
    if not hello.get("minProtocol", 1) <= PROTOCOL <= hello.get("protocol", 0):
        send({"type": "error", "message": "this plugin speaks protocol %d only" % PROTOCOL})
        return 1
    options = hello.get("options", {})
    path = options.get("file")
    if not path:
        send({"type": "error", "message": "the file option is missing: options: {file: songs.csv}"})
        return 1
    try:
        handle = open(path, newline="", encoding="utf-8-sig")
    except OSError as error:
        send({"type": "error", "message": "cannot read %s: %s" % (path, error.strerror)})
        return 1
    send({"type": "hello", "protocol": PROTOCOL})

    counts = {"item": 0, "skip": 0, "fail": 0}
    with handle:
        reader = csv.DictReader(handle, delimiter=options.get("delimiter", ","))
        for row in reader:
            # The header is line 1 of the file, so the first row is line 2.
            place = "%s line %d" % (path, reader.line_num)
            message = row_message(row, place)
            counts[message["type"]] += 1
            send(message)
    send({"type": "end"})
    log("%s: %d items, %d skipped, %d failed" % (path, counts["item"], counts["skip"], counts["fail"]))
    return 0


def row_message(row, place):
    """The item, skip or fail message for one CSV row."""
    fields = {key.strip(): (value or "").strip() for key, value in row.items() if key}
    item_id = fields.get("id", "")
    if not item_id:
        return {"type": "fail", "id": place, "title": "(no id)", "reason": "the row has no id"}
    title = fields.get("title", "")
    if not title:
        return {"type": "fail", "id": item_id, "reason": place + ": the row has no title"}
    item = {"type": "item"}
    for key, value in fields.items():
        if value == "":
            continue
        if key in INTEGER_FIELDS:
            if not value.isdigit():
                return fail(item_id, title, place, "%s is %r, not a whole number" % (key, value))
            item[key] = int(value)
        elif key in URL_FIELDS and not value.startswith(("http://", "https://")):
            return fail(item_id, title, place, "%s %r is not an http or https URL" % (key, value))
        else:
            item[key] = value
    if "previewUrl" not in item:
        return {"type": "skip", "id": item_id, "title": title, "reason": place + ": the row has no previewUrl"}
    return item


def fail(item_id, title, place, reason):
    return {"type": "fail", "id": item_id, "title": title, "reason": "%s: %s" % (place, reason)}


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # mediafetch stopped reading (the run was interrupted): nothing more to say.
        sys.exit(1)
