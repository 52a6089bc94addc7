/// The page: plain HTML, CSS and JavaScript served by the binary itself, with no build step and nothing
/// fetched from elsewhere.
enum PageAssets {
    struct File: Sendable {
        var type: String
        var text: String
    }

    static let files: [String: File] = [
        "/": File(type: "text/html; charset=utf-8", text: html),
        "/app.js": File(type: "text/javascript; charset=utf-8", text: script),
        "/app.css": File(type: "text/css; charset=utf-8", text: style),
    ]

    /// Scripts and styles only from this server; artwork from the catalog's hosts (http or https); audio only
    /// from this server's library.
    static let policy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' http: https: data:; "
        + "media-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>MediaFetch</title>
<link rel="stylesheet" href="/app.css">
<script src="/app.js" defer></script>
</head>
<body>
<header>
  <h1>MediaFetch</h1>
  <p id="connection" role="status" aria-live="polite">Connecting…</p>
</header>
<main>
  <form id="search-form" role="search">
    <label for="term">Search</label>
    <input type="search" id="term" name="term" autocomplete="off" required maxlength="200" placeholder="artist, song or album">
    <label for="media" class="secondary">Media</label>
    <select id="media" name="media">
      <option value="music" selected>Music</option>
      <option value="podcast">Podcasts</option>
      <option value="musicVideo">Music videos</option>
      <option value="audiobook">Audiobooks</option>
      <option value="movie">Movies</option>
      <option value="all">All</option>
    </select>
    <button type="submit">Search</button>
  </form>
  <p id="message" role="alert" aria-live="assertive"></p>

  <section aria-labelledby="results-heading">
    <h2 id="results-heading">Results</h2>
    <table id="results">
      <thead><tr>
        <th scope="col"><span class="visually-hidden">Artwork</span></th>
        <th scope="col">Artist</th><th scope="col">Title</th><th scope="col" class="album">Album</th>
        <th scope="col" class="duration">Duration</th><th scope="col">Progress</th><th scope="col">Actions</th>
      </tr></thead>
      <tbody></tbody>
    </table>
    <p id="no-results" hidden>No results.</p>
  </section>

  <section aria-labelledby="queue-heading">
    <h2 id="queue-heading">Queue</h2>
    <p id="totals" aria-live="polite">Nothing queued.</p>
    <table id="queue">
      <thead><tr>
        <th scope="col">Title</th><th scope="col">Artist</th><th scope="col">Status</th>
        <th scope="col">Progress</th><th scope="col">Actions</th>
      </tr></thead>
      <tbody></tbody>
    </table>
  </section>

  <section aria-labelledby="player-heading">
    <h2 id="player-heading">Player</h2>
    <p id="now-playing">Nothing playing.</p>
    <audio id="player" controls preload="metadata"></audio>
  </section>
</main>
<footer><p>Previews provided courtesy of iTunes.</p></footer>
</body>
</html>
"""#

    static let script = #"""
// mediafetch serve's page: plain JavaScript, no framework, nothing fetched from elsewhere. Every string from
// the catalog or the server goes into the page through textContent or an attribute, never as HTML.
"use strict";

const state = {
  token: "",
  results: [],          // search results, in the catalog's order
  downloads: new Map(), // id -> download, in the order they were queued
  samples: [],          // [time ms, total received bytes] for the ETA
  latencies: [],        // ms from the server's event to the page, for measurements
  changed: new Set(),   // ids to draw again at the next frame
  resultRows: new Map(), // id -> {row, result} of the results table
  queueRows: new Map(),  // id -> row of the queue table
  everything: false,    // draw every row again (a snapshot, a new search)
};
window.mediafetch = state;

function readToken() {
  const match = /(?:^|[#&])token=([^&]+)/.exec(location.hash);
  if (match) {
    state.token = decodeURIComponent(match[1]);
    sessionStorage.setItem("mediafetch-token", state.token);
    // The token stays out of the address bar, bookmarks and screenshots.
    history.replaceState(null, "", location.pathname + location.search);
  } else {
    state.token = sessionStorage.getItem("mediafetch-token") || "";
  }
}

function say(text) { document.getElementById("message").textContent = text; }

async function api(method, path, body) {
  const options = { method, headers: { Authorization: "Bearer " + state.token } };
  if (method !== "GET") {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body || {});
  }
  const response = await fetch(path, options);
  if (response.status === 204) return {};
  const data = await response.json().catch(() => ({ error: "the server's answer was not JSON" }));
  if (!response.ok) throw new Error(data.error || "HTTP " + response.status);
  return data;
}

function duration(seconds) {
  if (seconds == null || !(seconds > 0)) return "";
  const total = Math.round(seconds);
  const h = Math.floor(total / 3600), m = Math.floor(total / 60) % 60, s = String(total % 60).padStart(2, "0");
  return h > 0 ? h + ":" + String(m).padStart(2, "0") + ":" + s : m + ":" + s;
}

function megabytes(bytes) {
  if (bytes < 1e6) return Math.round(bytes / 1e3) + " kB";
  return (bytes / 1e6).toFixed(bytes >= 1e7 ? 0 : 1) + " MB";
}

function cell(row, text, className) {
  const td = document.createElement("td");
  if (className) td.className = className;
  td.textContent = text == null ? "" : String(text);
  row.appendChild(td);
  return td;
}

function button(name, label, action) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = name;
  b.setAttribute("aria-label", name + " " + label);
  b.dataset.action = name.toLowerCase();
  b.addEventListener("click", action);
  return b;
}

// The buttons that apply to an item: Download before it is queued, then Pause / Resume / Cancel / Play.
function actions(id, label, download, downloadable) {
  const td = document.createElement("td");
  td.className = "actions";
  const status = download ? download.status : null;
  const act = (verb) => async () => {
    try {
      const changed = await api("POST", "/api/downloads/" + encodeURIComponent(id) + "/" + verb);
      update(changed);
    } catch (error) { say(error.message); }
  };
  if (!download || status === "cancelled" || status === "failed") {
    if (downloadable) {
      td.appendChild(button(status ? "Resume" : "Download", label, async () => {
        try {
          const answer = await api("POST", "/api/downloads", { ids: [id] });
          for (const item of answer.downloads) update(item);
        } catch (error) { say(error.message); }
      }));
    }
  } else if (status === "queued" || status === "downloading") {
    td.appendChild(button("Pause", label, act("pause")));
    td.appendChild(button("Cancel", label, act("cancel")));
  } else if (status === "paused") {
    td.appendChild(button("Resume", label, act("resume")));
    td.appendChild(button("Cancel", label, act("cancel")));
  } else if (status === "stored" && download.location) {
    td.appendChild(button("Play", label, () => play(download)));
  }
  return td;
}

function progressCell(download) {
  const td = document.createElement("td");
  const bar = document.createElement("progress");
  bar.max = 1;
  const label = document.createElement("span");
  label.className = "status";
  if (download) {
    const expected = download.expectedBytes;
    if (download.status === "stored") bar.value = 1;
    else if (expected > 0) bar.value = Math.min(1, download.receivedBytes / expected);
    else if (download.status !== "downloading") bar.value = 0;
    else bar.removeAttribute("value");
    let text = download.status;
    if (download.status === "downloading" || download.status === "paused") {
      text += " " + megabytes(download.receivedBytes) + (expected > 0 ? " of " + megabytes(expected) : "");
    }
    if (download.reason && download.status === "failed") text += ": " + download.reason;
    label.textContent = text;
  } else {
    bar.value = 0;
  }
  bar.setAttribute("aria-label", "progress");
  td.appendChild(bar);
  td.appendChild(label);
  return td;
}

function titleOf(item) { return (item.artist ? item.artist + " – " : "") + item.title; }

function resultRow(result) {
  const row = document.createElement("tr");
  row.dataset.id = result.id;
  const art = document.createElement("td");
  if (typeof result.artworkUrl === "string" && /^https?:\/\//.test(result.artworkUrl)) {
    const img = document.createElement("img");
    img.className = "art";
    img.alt = "";
    img.loading = "lazy";
    img.referrerPolicy = "no-referrer";
    // A picture that does not load leaves an empty cell, not a broken-image frame.
    img.addEventListener("error", () => img.remove());
    img.src = result.artworkUrl;
    art.appendChild(img);
  }
  row.appendChild(art);
  cell(row, result.artist);
  cell(row, result.title);
  cell(row, result.album, "album");
  cell(row, duration(result.duration), "duration");
  const download = state.downloads.get(result.id);
  row.appendChild(progressCell(download));
  row.appendChild(actions(result.id, titleOf(result), download, result.downloadable));
  return row;
}

function queueRow(download) {
  const row = document.createElement("tr");
  row.dataset.id = download.id;
  cell(row, download.title);
  cell(row, download.artist);
  cell(row, download.status);
  row.appendChild(progressCell(download));
  row.appendChild(actions(download.id, titleOf(download), download, true));
  return row;
}

function renderResults() {
  const body = document.querySelector("#results tbody");
  state.resultRows = new Map();
  keepFocus(body, () => body.replaceChildren(...state.results.map((result) => {
    const row = resultRow(result);
    state.resultRows.set(result.id, { row, result });
    return row;
  })));
  document.getElementById("no-results").hidden = state.results.length > 0 || !state.searched;
}

function renderQueue() {
  const body = document.querySelector("#queue tbody");
  state.queueRows = new Map();
  keepFocus(body, () => body.replaceChildren(...[...state.downloads.values()].map((download) => {
    const row = queueRow(download);
    state.queueRows.set(download.id, row);
    return row;
  })));
  renderTotals();
}

// Only the rows of items that changed are drawn again, found by id without a search: a queue of thousands
// stays cheap to watch.
function renderChanged(ids) {
  const queue = document.querySelector("#queue tbody");
  keepFocus(document.querySelector("main"), () => {
    for (const id of ids) {
      const shown = state.resultRows.get(id);
      if (shown) {
        const row = resultRow(shown.result);
        shown.row.replaceWith(row);
        shown.row = row;
      }
      const download = state.downloads.get(id);
      if (!download) continue;
      const row = queueRow(download);
      const listed = state.queueRows.get(id);
      if (listed) listed.replaceWith(row); else queue.appendChild(row);
      state.queueRows.set(id, row);
    }
  });
  renderTotals();
}

// Rows are drawn anew on a change; the focused button comes back where it was, so the keyboard is not lost.
function keepFocus(container, draw) {
  const focused = document.activeElement;
  const where = focused && container.contains(focused) && focused.dataset.action
    ? [focused.closest("tbody"), focused.closest("tr").dataset.id, focused.dataset.action] : null;
  draw();
  if (where) {
    const row = where[0].querySelector(`tr[data-id="${CSS.escape(where[1])}"]`);
    const again = row && (row.querySelector('button[data-action="' + where[2] + '"]') || row.querySelector("button"));
    if (again) again.focus();
  }
}

function renderTotals() {
  const all = [...state.downloads.values()];
  const count = (status) => all.filter((d) => d.status === status).length;
  const active = all.filter((d) => d.status === "queued" || d.status === "downloading");
  const received = all.reduce((sum, d) => sum + (d.receivedBytes || 0), 0);
  const left = active.reduce((sum, d) => sum + Math.max(0, (d.expectedBytes || 0) - (d.receivedBytes || 0)), 0);
  const now = Date.now();
  state.samples.push([now, received]);
  while (state.samples.length > 2 && now - state.samples[0][0] > 5000) state.samples.shift();
  const [t0, b0] = state.samples[0];
  const rate = now > t0 ? (received - b0) / ((now - t0) / 1000) : 0;
  let eta = "";
  if (active.length > 0 && rate > 0 && left > 0) eta = " · ETA " + duration(Math.max(1, left / rate));
  else if (active.length > 0) eta = " · ETA unknown";
  document.getElementById("totals").textContent = all.length === 0 ? "Nothing queued." :
    all.length + " items: " + count("stored") + " stored, " + count("downloading") + " downloading, " +
    count("queued") + " queued, " + count("paused") + " paused, " + count("failed") + " failed, " +
    count("cancelled") + " cancelled · " + megabytes(received) + " received" +
    (rate > 0 && active.length > 0 ? " at " + megabytes(rate) + "/s" : "") + eta;
}

function update(download) {
  state.downloads.set(download.id, download);
  state.changed.add(download.id);
  schedule();
}

// Drawn at most four times a second: events keep coming in between, and the page stays cheap beside a run of
// thousands of files (the machine's cores are the downloads' too).
let pending = false;
let lastDraw = 0;
function schedule(everything) {
  if (everything) state.everything = true;
  if (pending) return;
  pending = true;
  const wait = Math.max(0, lastDraw + 250 - Date.now());
  setTimeout(() => requestAnimationFrame(() => {
    pending = false;
    lastDraw = Date.now();
    const changed = state.changed;
    state.changed = new Set();
    if (state.everything) {
      state.everything = false;
      renderResults();
      renderQueue();
    } else {
      renderChanged(changed);
    }
  }), wait);
}

function play(download) {
  const player = document.getElementById("player");
  const path = download.location.split("/").map(encodeURIComponent).join("/");
  player.src = "/library/" + path;
  document.getElementById("now-playing").textContent = "Playing: " + titleOf(download);
  player.play().catch((error) => say("cannot play: " + error.message));
}

async function search(event) {
  event.preventDefault();
  const term = document.getElementById("term").value.trim();
  if (!term) return;
  const media = document.getElementById("media").value;
  say("");
  try {
    const answer = await api("GET", "/api/search?term=" + encodeURIComponent(term) + "&media=" +
      encodeURIComponent(media) + "&limit=25");
    state.results = answer.results;
    state.searched = true;
    renderResults();
  } catch (error) { say(error.message); }
}

// Server-sent events through fetch (EventSource cannot send the bearer token); reconnects after a restart.
async function listen() {
  const status = document.getElementById("connection");
  for (;;) {
    try {
      const response = await fetch("/api/events", { headers: { Authorization: "Bearer " + state.token } });
      if (response.status === 401) { status.textContent = "The access token is missing or wrong: open the URL serve printed."; return; }
      if (!response.ok || !response.body) throw new Error("HTTP " + response.status);
      status.textContent = "Connected";
      await api("POST", "/api/session").catch(() => {});
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          handleEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
        }
      }
    } catch (error) { /* the server went away: try again below */ }
    status.textContent = "Reconnecting…";
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function handleEvent(block) {
  let name = "message", data = "";
  for (const line of block.split("\n")) {
    if (line.startsWith("event: ")) name = line.slice(7);
    else if (line.startsWith("data: ")) data += line.slice(6);
  }
  if (!data) return;
  let payload;
  try { payload = JSON.parse(data); } catch { return; }
  if (typeof payload.at === "number") {
    state.latencies.push(Date.now() - payload.at);
    if (state.latencies.length > 10000) state.latencies.shift();
  }
  if (name === "snapshot") {
    state.downloads = new Map(payload.downloads.map((d) => [d.id, d]));
    schedule(true);
  } else if (name === "download") {
    update(payload.download);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  readToken();
  document.getElementById("search-form").addEventListener("submit", search);
  document.getElementById("term").focus();
  listen();
});
"""#

    static let style = #"""
:root { color-scheme: light dark; --accent: #0a60c2; font-family: system-ui, sans-serif; }
body { margin: 0 auto; max-width: 72rem; padding: 0 1rem 2rem; line-height: 1.4; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 1rem; }
h1 { font-size: 1.5rem; margin: 1rem 0 0.5rem; }
h2 { font-size: 1.15rem; margin: 1.5rem 0 0.5rem; }
form { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; }
input[type=search] { flex: 1 1 14rem; min-width: 0; font-size: 1rem; padding: 0.45rem; }
select, button { font-size: 0.95rem; padding: 0.4rem 0.7rem; }
button { cursor: pointer; border-radius: 0.3rem; border: 1px solid var(--accent); background: transparent; color: inherit; }
button:hover { background: color-mix(in srgb, var(--accent) 15%, transparent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
/* Fixed column widths: a changed row never makes the browser lay out every other row again. */
#results th:nth-child(1) { width: 56px; }
#results th:nth-child(5) { width: 5rem; }
#results th:nth-child(6), #queue th:nth-child(4) { width: 9rem; }
#results th:nth-child(7), #queue th:nth-child(5) { width: 11rem; }
#queue th:nth-child(3) { width: 7rem; }
th, td { text-align: left; padding: 0.35rem 0.4rem; border-bottom: 1px solid color-mix(in srgb, currentColor 20%, transparent); vertical-align: middle; overflow-wrap: anywhere; }
td.actions { white-space: nowrap; }
td { unicode-bidi: isolate; }
th { white-space: nowrap; }
td.actions button { margin: 0.1rem; }
img.art { width: 48px; height: 48px; object-fit: cover; display: block; }
progress { width: 7rem; max-width: 100%; }
.status { font-size: 0.85rem; opacity: 0.8; display: block; }
#message:empty { display: none; }
#message { color: #b00020; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
audio { width: 100%; }
footer { margin-top: 2rem; font-size: 0.85rem; opacity: 0.75; }
@media (max-width: 40rem) {
  .album, .duration, label.secondary, #media { display: none; }
  thead { display: none; }
  table, tbody, tr, td { display: block; }
  tr { display: grid; grid-template-columns: 56px 1fr; gap: 0 0.5rem; padding: 0.5rem 0; border-bottom: 1px solid color-mix(in srgb, currentColor 20%, transparent); }
  td { border: 0; padding: 0.1rem 0; }
  #results td:first-child { grid-row: span 4; }
  #queue td, #results td:not(:first-child) { grid-column: 2; }
  #queue tr { grid-template-columns: 1fr; }
  #queue td { grid-column: 1; }
  progress { width: 100%; }
}
"""#
}
