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
<link rel="icon" href="data:,">
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
    <!-- Not a live region: it changes up to ten times a second, which a screen reader would read out without end. -->
    <p id="totals">Nothing queued.</p>
    <div class="queue-head" aria-hidden="true"><span>Title</span><span>Artist</span><span>Status</span><span>Progress</span><span>Actions</span></div>
    <div id="queue-view" role="region" tabindex="0" aria-label="Queue, scrollable"><div id="row-probe" aria-hidden="true"></div><ol id="queue" aria-label="Queue"></ol></div>
    <p id="announce" class="visually-hidden" aria-live="polite"></p>
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
  downloads: new Map(), // id -> download
  order: [],            // ids in the order they were queued: the queue's rows
  position: new Map(),  // id -> its index in order
  samples: [],          // [time ms, total received bytes] for the ETA
  latencies: [],        // ms from the server's stamp on a message until the page drew it, for measurements
  changed: new Set(),   // ids to draw again at the next frame
  drawing: [],          // the server's stamps of the messages waiting for that frame
  draws: 0, drawMs: 0,  // frames drawn and the time their scripts took, for measurements
  resultRows: new Map(), // id -> {row, result} of the results table
  queueRows: new Map(),  // id -> row of the queue in view
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

// Catalog text as it is shown: without bidirectional embeddings, overrides and isolates, which would make a title
// read as something else ("...\u202Egnp.exe" shows as "...exe.png"), as names on disk are without them too.
function plain(text) {
  return text == null ? "" : String(text).replace(/[\u202A-\u202E\u2066-\u2069]/g, "");
}

function cell(row, text, className, tag) {
  const td = document.createElement(tag || "td");
  if (className) td.className = className;
  td.textContent = plain(text);
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
function actions(id, label, download, downloadable, tag) {
  const td = document.createElement(tag || "td");
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

function progressCell(download, tag) {
  const td = document.createElement(tag || "td");
  const bar = document.createElement("progress");
  bar.max = 1;
  bar.setAttribute("aria-label", "progress");
  const label = document.createElement("span");
  label.className = "status";
  td.appendChild(bar);
  td.appendChild(label);
  fillProgress(td, download);
  return td;
}

// The bar and the words under it, set in place: a change of bytes touches two nodes, not a row. The words are
// cut to one line in the queue; the whole of them is the label's title.
function fillProgress(td, download) {
  const bar = td.firstChild, label = td.lastChild;
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
    if (download.reason && download.status === "failed") text += ": " + plain(download.reason);
    if (label.textContent !== text) {
      label.textContent = text;
      label.title = text;
    }
  } else {
    bar.value = 0;
  }
}

// What decides which buttons a row shows: they are made again only when it changes.
function actionsKey(download) { return download ? download.status + (download.location ? "+" : "") : ""; }

// Brings a drawn row up to date in place; `progressAt` and `actionsAt` are the columns of its progress and its
// buttons, `statusAt` the column of its status words (the queue's) or -1.
function refresh(row, download, progressAt, actionsAt, statusAt, make) {
  const cells = row.children;
  fillProgress(cells[progressAt], download);
  if (statusAt >= 0 && cells[statusAt].textContent !== download.status) cells[statusAt].textContent = download.status;
  const key = actionsKey(download);
  if (row.dataset.actions !== key) {
    row.dataset.actions = key;
    const focused = document.activeElement;
    const action = focused && cells[actionsAt].contains(focused) ? focused.dataset.action : null;
    const td = make();
    cells[actionsAt].replaceWith(td);
    // The focused button comes back where it was, so the keyboard is not lost.
    if (action) {
      const again = td.querySelector('button[data-action="' + action + '"]') || td.querySelector("button");
      if (again) again.focus();
    }
  }
}

function titleOf(item) { return plain((item.artist ? item.artist + " – " : "") + item.title); }

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
  row.dataset.actions = actionsKey(download);
  return row;
}

// The queue is a list drawn as a window: only the rows in view (and a few either side) exist, each at its
// place in a list as tall as the whole queue, so a queue of thousands costs the browser what a screenful costs.
function queueRow(download) {
  const row = document.createElement("li");
  row.dataset.id = download.id;
  cell(row, download.title, "title", "span").title = plain(download.title);
  cell(row, download.artist, "artist", "span").title = plain(download.artist);
  cell(row, download.status, "state", "span");
  row.appendChild(progressCell(download, "span"));
  row.appendChild(actions(download.id, titleOf(download), download, true, "span"));
  row.dataset.actions = actionsKey(download);
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

// The height of a queue row in px: the probe is as tall as a row (--row, in rem, so it follows the reader's
// font size and the phone layout), measured again only when the view's size changes.
let rowHeight = 0;
function measureRow() {
  rowHeight = document.getElementById("row-probe").getBoundingClientRect().height || 56;
}

// The rows of the queue in view: made when they scroll into view, brought up to date in place when their item
// changed, and let go when they leave it. The row holding the focus is kept (and kept up to date) wherever it is,
// so the keyboard is never lost; the rows stay in the list's order, so Tab goes down them as they are seen.
function renderQueue(changed) {
  const view = document.getElementById("queue-view");
  const list = document.getElementById("queue");
  if (!rowHeight) measureRow();
  const height = rowHeight;
  const count = state.order.length;
  list.style.height = count * height + "px";
  const first = Math.max(0, Math.floor(view.scrollTop / height) - 5);
  const last = Math.min(count, Math.ceil((view.scrollTop + view.clientHeight) / height) + 5);
  const focused = document.activeElement;
  const holder = focused && list.contains(focused) ? focused.closest("li") : null;
  const indices = [];
  for (let index = first; index < last; index++) indices.push(index);
  const held = holder ? state.position.get(holder.dataset.id) : undefined;
  if (held !== undefined && (held < first || held >= last)) {
    indices.push(held);
    indices.sort((a, b) => a - b);
  }
  const kept = new Map();
  let before = null;
  for (const index of indices) {
    const id = state.order[index];
    const download = state.downloads.get(id);
    let row = state.queueRows.get(id);
    if (!row) row = queueRow(download);
    else if (changed.has(id)) refresh(row, download, 3, 4, 2, () => actions(id, titleOf(download), download, true, "span"));
    const top = index * height + "px";
    // Compared with what was set, not with style.top, which the browser may write back rounded.
    if (row.dataset.top !== top) {
      row.dataset.top = top;
      row.style.top = top;
    }
    if (row.getAttribute("aria-posinset") !== String(index + 1)) row.setAttribute("aria-posinset", String(index + 1));
    if (row.getAttribute("aria-setsize") !== String(count)) row.setAttribute("aria-setsize", String(count));
    const next = before ? before.nextSibling : list.firstChild;
    if (row !== next) list.insertBefore(row, next);
    before = row;
    kept.set(id, row);
  }
  for (const [id, row] of state.queueRows) if (!kept.has(id)) row.remove();
  state.queueRows = kept;
  // Moving a node takes the focus from it: give it back.
  if (holder && document.activeElement !== focused && holder.isConnected) focused.focus({ preventScroll: true });
}

// Only the result rows of items that changed are touched, found by id without a search, and in place.
function renderChanged(ids) {
  for (const id of ids) {
    const download = state.downloads.get(id);
    const shown = state.resultRows.get(id);
    if (shown && download) {
      refresh(shown.row, download, 5, 6, -1,
        () => actions(id, titleOf(shown.result), download, shown.result.downloadable));
    }
  }
}

// A snapshot or a new search draws the tables anew; the focused button comes back where it was, so the keyboard
// is not lost.
function keepFocus(container, draw) {
  const focused = document.activeElement;
  const where = focused && container.contains(focused) && focused.dataset.action
    ? [container, focused.closest("[data-id]").dataset.id, focused.dataset.action] : null;
  draw();
  if (where) {
    const row = where[0].querySelector(`[data-id="${CSS.escape(where[1])}"]`);
    const again = row && (row.querySelector('button[data-action="' + where[2] + '"]') || row.querySelector("button"));
    if (again) again.focus();
  }
}

// The totals are kept as items change, so drawing them does not walk the queue.
const totals = { statuses: new Map(), received: 0, left: 0, active: 0 };

function count(download, sign) {
  totals.statuses.set(download.status, (totals.statuses.get(download.status) || 0) + sign);
  totals.received += sign * (download.receivedBytes || 0);
  if (download.status === "queued" || download.status === "downloading") {
    totals.active += sign;
    totals.left += sign * Math.max(0, (download.expectedBytes || 0) - (download.receivedBytes || 0));
  }
}

function forgetAll() {
  state.downloads = new Map();
  state.order = [];
  state.position = new Map();
  state.samples = [];
  totals.statuses = new Map();
  totals.received = totals.left = totals.active = 0;
}

function remember(download) {
  const old = state.downloads.get(download.id);
  if (old) count(old, -1);
  else {
    state.position.set(download.id, state.order.length);
    state.order.push(download.id);
  }
  count(download, 1);
  state.downloads.set(download.id, download);
  state.changed.add(download.id);
}

function renderTotals() {
  const items = state.order.length;
  const number = (status) => totals.statuses.get(status) || 0;
  const now = Date.now();
  state.samples.push([now, totals.received]);
  while (state.samples.length > 2 && now - state.samples[0][0] > 5000) state.samples.shift();
  const [t0, b0] = state.samples[0];
  const rate = now > t0 ? (totals.received - b0) / ((now - t0) / 1000) : 0;
  let eta = "";
  if (totals.active > 0 && rate > 0 && totals.left > 0) eta = " · ETA " + duration(Math.max(1, totals.left / rate));
  else if (totals.active > 0) eta = " · ETA unknown";
  const text = items === 0 ? "Nothing queued." :
    items + " items: " + number("stored") + " stored, " + number("downloading") + " downloading, " +
    number("queued") + " queued, " + number("paused") + " paused, " + number("failed") + " failed, " +
    number("cancelled") + " cancelled · " + megabytes(totals.received) + " received" +
    (rate > 0 && totals.active > 0 ? " at " + megabytes(rate) + "/s" : "") + eta;
  const shown = document.getElementById("totals");
  if (shown.textContent !== text) shown.textContent = text;
  announce(items, number("stored"), number("failed"));
}

// What a screen reader hears, politely and seldom (the totals change too often to be a live region): new
// failures at most every five seconds, and once the queue has nothing left to do.
let announced = { failed: 0, at: 0, finished: "" };
function announce(items, stored, failed) {
  const region = document.getElementById("announce");
  const now = Date.now();
  if (items > 0 && totals.active === 0) {
    const text = "Queue done: " + stored + " stored, " + failed + " failed, of " + items + ".";
    if (announced.finished !== text) { announced.finished = text; region.textContent = text; }
    announced.failed = failed;
    return;
  }
  announced.finished = "";
  if (failed > announced.failed && now - announced.at >= 5000) {
    region.textContent = (failed - announced.failed) + " more failed; " + failed + " failed in all.";
    announced = { failed, at: now, finished: "" };
  }
}

function update(download) {
  remember(download);
  schedule();
}

// Drawn at the next frame after changes come: the server sends them together, at most ten messages a second,
// so the page stays cheap beside a run of thousands of files (the machine's cores are the downloads' too).
// `latencies` records, for every message, the time from the server's stamp (its oldest change) until the
// page has drawn it.
let pending = false;
function schedule(everything, at) {
  if (everything) state.everything = true;
  if (typeof at === "number") state.drawing.push(at);
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    const began = performance.now();
    pending = false;
    const changed = state.changed;
    state.changed = new Set();
    if (state.everything) {
      // A snapshot: every item is in `changed`, so the rows in view are brought up to date in place (the focus
      // stays where it was), and rows of items the server no longer has go.
      state.everything = false;
      renderResults();
      for (const [id, row] of state.queueRows) {
        if (!state.downloads.has(id)) { row.remove(); state.queueRows.delete(id); }
      }
    } else {
      renderChanged(changed);
    }
    renderQueue(changed);
    renderTotals();
    const now = Date.now();
    state.drawMs += performance.now() - began;
    state.draws += 1;
    for (const at of state.drawing) state.latencies.push(now - at);
    state.drawing = [];
    if (state.latencies.length > 10000) state.latencies.splice(0, state.latencies.length - 10000);
  });
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
  const at = typeof payload.at === "number" ? payload.at : undefined;
  if (name === "snapshot" && Array.isArray(payload.downloads)) {
    forgetAll();
    for (const download of payload.downloads) remember(download);
    schedule(true, at);
  } else if (name === "downloads" && Array.isArray(payload.downloads)) {
    for (const download of payload.downloads) remember(download);
    schedule(false, at);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  readToken();
  document.getElementById("search-form").addEventListener("submit", search);
  document.getElementById("term").focus();
  const view = document.getElementById("queue-view");
  view.addEventListener("scroll", () => schedule(), { passive: true });
  // A change of the view's size (the window, the phone layout, the reader's font size) changes what is in view
  // and may change a row's height.
  new ResizeObserver(() => { measureRow(); schedule(); }).observe(view);
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
#results th:nth-child(6) { width: 9rem; }
#results th:nth-child(7) { width: 11rem; }
/* The queue's rows have one height (--row; the script measures the probe) and only those in view exist. */
#queue-view { --row: 3.6rem; max-height: min(36rem, 70vh); overflow-y: auto; position: relative; padding: 3px; }
#row-probe { position: absolute; visibility: hidden; height: var(--row); width: 1px; }
#queue { list-style: none; margin: 0; padding: 0; position: relative; }
#queue li, .queue-head { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr) 7rem 9rem 11rem; gap: 0 0.8rem; align-items: center; padding: 0.35rem 0.4rem; border-bottom: 1px solid color-mix(in srgb, currentColor 20%, transparent); }
.queue-head { font-weight: bold; }
#queue li { position: absolute; left: 0; right: 0; height: var(--row); box-sizing: border-box; overflow: hidden; }
#queue li > span { unicode-bidi: isolate; min-width: 0; }
#queue .title, #queue .artist, #queue .status { overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
#queue .actions { white-space: nowrap; }
#queue .actions button { margin: 0.1rem; }
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
  #results td:not(:first-child) { grid-column: 2; }
  .queue-head { display: none; }
  #queue-view { --row: 11.5rem; }
  #queue li { grid-template-columns: 1fr; gap: 0.1rem; padding: 0.5rem 0; }
  progress { width: 100%; }
}
"""#
}
