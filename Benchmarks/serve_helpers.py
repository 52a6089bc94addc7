"""Helpers of Benchmarks/serve.sh (not a test): a catalog that answers searches with the benchmark's tree, the
client that queues the files and times the run, and the two watchers (an SSE reader, headless Chromium with the
page), each printing event latencies: the page's clock minus the server's `at` stamp on each event."""
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.request


def catalog(port, base, count):
    """Answers /search?term=batchK with files K*200 .. K*200+199 of the tree as iTunes song records."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            from urllib.parse import parse_qs, urlparse
            query = parse_qs(urlparse(self.path).query)
            batch = int(query.get("term", ["batch0"])[0].replace("batch", "") or 0)
            records = []
            for index in range(batch * 200, min(count, batch * 200 + 200)):
                records.append({
                    "wrapperType": "track", "kind": "song", "trackId": 100000 + index, "artistId": 1,
                    "collectionId": 2, "artistName": "Bench", "collectionName": "Tree",
                    "trackName": f"File {index:05d}", "trackNumber": 1,
                    "previewUrl": f"{base}/files/f{index:05d}.m4a", "trackTimeMillis": 30000,
                })
            body = json.dumps({"resultCount": len(records), "results": records}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/javascript; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def call(base, token, method, path, body=None):
    request = urllib.request.Request(base + path, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + token)
    if body is not None:
        request.add_header("Content-Type", "application/json")
        request.add_header("Origin", base)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def client(base, token, count, library, total_bytes):
    """Searches every batch, then queues them all and times until every file is in the library."""
    ids = []
    for batch in range((count + 199) // 200):
        ids += [r["id"] for r in call(base, token, "GET", f"/api/search?term=batch{batch}&limit=200")["results"]]
    start = time.monotonic()
    for offset in range(0, len(ids), 200):
        call(base, token, "POST", "/api/downloads", {"ids": ids[offset:offset + 200]})
    # Polling the folder is the harness's own cost, on the cores the run uses (a look at 2,000 names takes about
    # 1 ms of CPU): every 5 ms it was a few tenths of a second a run, the size of the browser's cost being
    # measured. It looks every 50 ms until 10% are left, every 10 ms until 1% is, then every 2 ms, so the end is
    # still seen within 2 ms.
    while True:
        stored = len([name for name in os.listdir(library) if name.endswith(".m4a")]) if os.path.isdir(library) else 0
        if stored >= count:
            break
        left = count - stored
        time.sleep(0.05 if left > count // 10 else 0.01 if left > count // 100 else 0.002)
    wall = time.monotonic() - start
    print(f"{wall:.3f} {total_bytes / wall / 1e6:.0f}")


def report(latencies, label):
    if not latencies:
        print(f"{label}: no events", file=sys.stderr)
        return
    ordered = sorted(latencies)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    print(json.dumps({"watcher": label, "events": len(ordered), "median_ms": pick(0.5), "p95_ms": pick(0.95),
                      "p99_ms": pick(0.99), "max_ms": ordered[-1]}), flush=True)


def sse(base, token, stop_file):
    """Reads /api/events until stop_file appears; the latency of each message (the snapshot's and every batch of
    changes', whose stamp is its oldest change)."""
    host, port = base.replace("http://", "").split(":")
    connection = socket.create_connection((host, int(port)))
    connection.sendall(f"GET /api/events HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    connection.settimeout(0.2)
    buffer, latencies = b"", []
    while not os.path.exists(stop_file):
        try:
            data = connection.recv(65536)
        except socket.timeout:
            continue
        if not data:
            break
        now = time.time() * 1000
        buffer += data
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            for line in block.split(b"\n"):
                if line.startswith(b"data: "):
                    try:
                        payload = json.loads(line[6:])
                    except ValueError:
                        continue
                    if "downloads" in payload and "at" in payload:
                        latencies.append(now - payload["at"])
    report(latencies, "sse")


def chromium_cpu():
    """CPU seconds (user + system) used so far by Chromium's processes on the machine, by kind (browser,
    renderer, gpu-process, utility, chromedriver)."""
    spent = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)
            if "chrom" not in fields[0]:
                continue
            with open(f"/proc/{pid}/cmdline") as cmdline:
                arguments = cmdline.read().split("\0")
            # Chromium rewrites its children's command lines without --type=; their other switches tell them apart.
            line = " ".join(arguments)
            kind = ("chromedriver" if "chromedriver" in fields[0] else "renderer" if "--renderer-client-id" in line
                    else "gpu" if "--gpu-preferences" in line else "utility" if "--field-trial-handle" in line
                    else "browser")
            parts = fields[1].split()
            spent[kind] = spent.get(kind, 0) + (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue
    return spent


def page_metrics(driver):
    """The page's main-thread figures from Chromium's DevTools: seconds of work and counts since it opened."""
    answer = driver.execute_cdp_cmd("Performance.getMetrics", {})
    return {metric["name"]: metric["value"] for metric in answer.get("metrics", [])}


def browser(url, stop_file):
    """Headless Chromium with the page open until stop_file appears; the page's own latency record."""
    os.environ["SE_OFFLINE"] = "true"
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--window-size=1280,1000"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.get(url)
        for _ in range(600):
            if driver.find_element("id", "connection").text == "Connected":
                break
            time.sleep(0.05)
        # A browser just started is busy for a few seconds with its own UI: headless Chromium preloads its omnibox
        # popup, a WebUI page in a renderer of its own, and that took 0.4-0.6 s of CPU inside the timed run when the
        # run began at once. A person opens the page before queueing, so the run waits until Chromium's processes
        # are quiet (under 0.02 s of CPU in half a second), at most 30 s.
        began, last = time.monotonic(), sum(chromium_cpu().values())
        while time.monotonic() - began < 30:
            time.sleep(0.5)
            now = sum(chromium_cpu().values())
            if now - last < 0.02:
                break
            last = now
        settled = time.monotonic() - began
        if settled >= 30:
            print("browser page: Chromium did not settle in 30 s; the run starts anyway", file=sys.stderr)
        driver.execute_cdp_cmd("Performance.enable", {})
        metrics_before = page_metrics(driver)
        before = chromium_cpu()
        print("watching", flush=True)
        while not os.path.exists(stop_file):
            time.sleep(0.1)
        latencies = driver.execute_script("return window.mediafetch.latencies.slice(1)")
        after = chromium_cpu()
        metrics = page_metrics(driver)
        spent_cpu = {kind: after[kind] - before.get(kind, 0) for kind in after}
        rows = driver.execute_script("return window.mediafetch.order.length + ' queued, ' + "
                                     "document.querySelectorAll('#queue li').length + ' drawn'")
        draws = driver.execute_script("return [window.mediafetch.draws, window.mediafetch.drawMs]")
        print(f"browser rows: {rows}, draws: {draws[0]} taking {draws[1]:.0f} ms of script; CPU of Chromium's "
              f"processes: {sum(spent_cpu.values()):.2f} s ("
              + ", ".join(f"{kind} {cpu:.2f}" for kind, cpu in sorted(spent_cpu.items())) + ")", file=sys.stderr)
        work = {name: metrics.get(name, 0) - metrics_before.get(name, 0) for name in
                ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration", "LayoutCount")}
        print(f"browser page: settled {settled:.1f} s before the run; its main thread busy {work['TaskDuration']:.2f} s "
              f"(script {work['ScriptDuration']:.2f}, {work['LayoutCount']:.0f} layouts {work['LayoutDuration']:.2f}, "
              f"style {work['RecalcStyleDuration']:.2f})", file=sys.stderr)
        report(latencies, "browser")
    finally:
        driver.quit()


if __name__ == "__main__":
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "catalog":
        catalog(int(arguments[0]), arguments[1], int(arguments[2]))
    elif command == "client":
        client(arguments[0], arguments[1], int(arguments[2]), arguments[3], int(arguments[4]))
    elif command == "sse":
        sse(arguments[0], arguments[1], arguments[2])
    elif command == "browser":
        browser(arguments[0], arguments[1])
