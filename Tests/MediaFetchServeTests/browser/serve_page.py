"""Drives `mediafetch serve`'s page in headless Chromium (Debian's chromium and chromium-driver, Selenium from
PyPI), offline: search, download with a moving progress bar, pause and resume one row while others go on,
cancel, a restart of serve (asked of the Swift test that runs this: "RESTART" on stdout, "RESTARTED" on stdin),
play, phone width, keyboard use, and hostile catalog strings. Exits 0 when every check held; otherwise prints
what failed on stderr and exits 1.

Usage: serve_page.py URL SCREENSHOT
"""
import os
import sys
import time

os.environ["SE_OFFLINE"] = "true"

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

URL, SCREENSHOT = sys.argv[1], sys.argv[2]


def fail(message):
    sys.stderr.write("FAILED: " + message + "\n")
    sys.exit(1)


def wait(what, condition, limit=90):
    deadline = time.time() + limit
    last_error = None
    while time.time() < deadline:
        try:
            value = condition()
            if value:
                return value
        except (StaleElementReferenceException, WebDriverException) as error:
            last_error = error
        time.sleep(0.05)
    fail("timed out waiting for " + what + (f" ({last_error})" if last_error else "") + "\n" + server_view())


def server_view():
    """What the page shows and what the server says of every download, to tell a lost event from a stalled run."""
    try:
        page = js("return JSON.stringify([...window.mediafetch.downloads.values()]"
                  ".map(d => [d.id, d.status, d.receivedBytes, d.expectedBytes]));")
        server = driver.execute_async_script("const done = arguments[arguments.length - 1];"
                    "fetch('/api/downloads', {headers: {Authorization: 'Bearer ' + window.mediafetch.token}})"
                    ".then(r => r.text()).then(done, e => done(String(e)));")
        connection = status_text()
        return f"page ({connection}): {page}\nserver: {server}"
    except Exception as error:  # noqa: BLE001 - a diagnostic must not hide the failure it explains
        return f"(no view of the downloads: {error})"


options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in [
    "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-first-run", "--disable-gpu",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--autoplay-policy=no-user-gesture-required",
    "--window-size=1280,1000", "--lang=en-US",
]:
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
driver.set_script_timeout(30)


def js(script, *args):
    return driver.execute_script(script, *args)


def status_text():
    return driver.find_element(By.ID, "connection").text


def row(table, item):
    return driver.find_element(By.CSS_SELECTOR, f"#{table} tbody tr[data-id='{item}']")


def progress(item):
    return js("const r = document.querySelector(`#results tbody tr[data-id='${arguments[0]}'] progress`);"
              "return r && r.hasAttribute('value') ? r.value : null;", item)


def download_status(item):
    return js("const d = window.mediafetch.downloads.get(arguments[0]); return d ? d.status : null;", item)


def click(table, item, name):
    def attempt():
        buttons = row(table, item).find_elements(By.XPATH, f".//button[normalize-space()='{name}']")
        if not buttons:
            return False
        buttons[0].click()
        return True
    wait(f"a {name} button on {item}", attempt)


try:
    driver.get(URL)
    wait("the event stream", lambda: status_text() == "Connected")
    if "token=" in driver.current_url:
        fail("the token stays in the address bar: " + driver.current_url)

    # The search field: type=search, labelled Search, focused at start, used from the keyboard.
    label = driver.find_element(By.XPATH, "//label[normalize-space()='Search']")
    field = driver.find_element(By.ID, label.get_attribute("for"))
    if field.get_attribute("type") != "search":
        fail("the Search field is not an input of type search")
    if driver.switch_to.active_element != field:
        fail("the Search field does not have the focus at start")
    field.send_keys("love", Keys.ENTER)
    wait("results", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#results tbody tr")) >= 8)
    ids = [r.get_attribute("data-id") for r in driver.find_elements(By.CSS_SELECTOR, "#results tbody tr")]
    headers = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#results thead th")]
    for name in ["Artist", "Title", "Album", "Duration"]:
        if name not in headers:
            fail(f"the results table has no {name} column: {headers}")

    # Hostile titles are shown as text and run nothing.
    hostile = [i for i in ids if "<img" in row("results", i).text]
    if not hostile:
        fail("the hostile title is not shown as text")
    if js("return window.__pwned") is not None or driver.find_elements(By.CSS_SELECTOR, "#results img[src='x']"):
        fail("a catalog string was run as HTML")
    plain = [i for i in ids if i not in hostile]
    first, second, third, fourth, fifth, sixth = plain[:6]

    # Download the first row from the keyboard: Tab to its Download button, Enter.
    for _ in range(80):
        active = driver.switch_to.active_element
        if active.tag_name == "button" and active.text == "Download":
            inside = js("return arguments[0].closest('tr').dataset.id", active)
            if inside == first:
                break
        active.send_keys(Keys.TAB)
    else:
        fail("the first row's Download button cannot be reached with Tab")
    driver.switch_to.active_element.send_keys(Keys.ENTER)
    wait("the keyboard's download to start", lambda: download_status(first) in ("queued", "downloading"))

    # The progress bar moves.
    seen = []
    def moved():
        value = progress(first)
        if value is not None and 0 < value < 1 and (not seen or value > seen[-1]):
            seen.append(value)
        return len(seen) >= 2
    wait("the progress bar to move", moved)

    for item in (second, third):
        click("results", item, "Download")
    # Each is seen under way, not necessarily both in one look: on a loaded machine the second may be stored
    # before the third's click has landed.
    started = set()
    def others_started():
        for item in (second, third):
            status = download_status(item)
            if status == "failed":
                fail(f"{item} failed instead of downloading")
            if status in ("downloading", "stored"):
                started.add(item)
        return len(started) == 2
    wait("the others to start", others_started)

    # Pause one row; the others go on and are stored; the paused one stays where it was.
    click("results", first, "Pause")
    wait("the pause", lambda: download_status(first) == "paused")
    time.sleep(0.5)
    held = progress(first)
    wait("the other rows to be stored", lambda: all(download_status(i) == "stored" for i in (second, third)))
    if progress(first) != held or download_status(first) != "paused":
        fail(f"the paused row moved: {held} -> {progress(first)}")
    click("results", first, "Resume")
    wait("the resumed row to be stored", lambda: download_status(first) == "stored")

    # Cancel one.
    click("results", fourth, "Download")
    wait("the fourth to start", lambda: download_status(fourth) == "downloading")
    click("results", fourth, "Cancel")
    wait("the cancel", lambda: download_status(fourth) == "cancelled")

    # A restart of serve: one row paused, one downloading when it goes.
    click("results", fifth, "Download")
    wait("the fifth to start", lambda: download_status(fifth) == "downloading")
    click("results", fifth, "Pause")
    wait("the fifth's pause", lambda: download_status(fifth) == "paused")
    click("results", sixth, "Download")
    wait("the sixth to start", lambda: download_status(sixth) == "downloading")
    print("RESTART", flush=True)
    if sys.stdin.readline().strip() != "RESTARTED":
        fail("the test did not restart serve")
    wait("the page to reconnect", lambda: status_text() == "Connected", limit=120)
    wait("the queue as it was", lambda: [download_status(i) for i in (first, second, third, fourth, fifth)]
         == ["stored", "stored", "stored", "cancelled", "paused"])
    wait("the download that was under way to resume and be stored", lambda: download_status(sixth) == "stored")
    # The page draws at the next frame after each message: the totals follow within a moment.
    wait("the queue's totals to say 4 stored", lambda: "4 stored" in driver.find_element(By.ID, "totals").text)

    # The queue view lists every item in the order it was queued, each with its status words and the buttons
    # that apply, and its last row's Play is reachable with Tab from the one before.
    def queue_rows():
        return js("return [...document.querySelectorAll('#queue li')].map((li) => "
                  "[li.dataset.id, li.querySelector('.state').textContent, "
                  "[...li.querySelectorAll('button')].map((b) => b.textContent)])")
    expected = [[first, "stored", ["Play"]], [second, "stored", ["Play"]], [third, "stored", ["Play"]],
                [fourth, "cancelled", ["Resume"]], [fifth, "paused", ["Resume", "Cancel"]],
                [sixth, "stored", ["Play"]]]
    wait(f"the queue view to list {expected}", lambda: queue_rows() == expected)
    js("document.querySelector(`#queue li[data-id='${arguments[0]}'] button`).focus()", fifth)
    driver.switch_to.active_element.send_keys(Keys.TAB)
    driver.switch_to.active_element.send_keys(Keys.TAB)
    active = driver.switch_to.active_element
    if active.text != "Play" or js("return arguments[0].closest('li').dataset.id", active) != sixth:
        fail("Tab from the fifth queue row's buttons does not reach the sixth row's Play")

    # Play: the audio element plays the stored file from /library.
    click("results", first, "Play")
    wait("the audio to play", lambda: js("const a = document.getElementById('player');"
                                         "return !a.error && a.currentTime > 0.3;"))
    start = js("return document.getElementById('player').currentTime")
    wait("the audio's time to advance", lambda: js("return document.getElementById('player').currentTime") > start)
    source = js("return document.getElementById('player').currentSrc")
    if "/library/" not in source:
        fail("the audio does not play from /library: " + source)

    driver.set_window_size(1280, 1500)
    time.sleep(0.3)
    driver.save_screenshot(SCREENSHOT)

    # Phone width: nothing wider than the screen.
    driver.set_window_size(390, 844)
    time.sleep(0.3)
    overflow = js("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    if overflow > 1:
        fail(f"at phone width the page is {overflow} px wider than the screen")
    latencies = js("return window.mediafetch.latencies.slice()")
    if latencies:
        ordered = sorted(latencies)
        print(f"LATENCY median {ordered[len(ordered) // 2]} ms, max {ordered[-1]} ms over {len(ordered)} events",
              flush=True)

    # A long queue costs what a screenful costs: 3,000 more items (made up on the page, never sent) draw only the
    # rows in view, and scrolling to the end draws the last ones.
    driver.set_window_size(1280, 1000)
    js("for (let i = 0; i < 3000; i++) remember({id: 'many-' + i, title: 'Song ' + i, artist: 'Many', "
       "status: 'queued', receivedBytes: 0, expectedBytes: 1000});"
       "schedule();")
    wait("the long queue's totals", lambda: "3006 items" in driver.find_element(By.ID, "totals").text)
    drawn = js("return document.querySelectorAll('#queue li').length")
    if not 0 < drawn < 100:
        fail(f"a queue of 3,006 items drew {drawn} rows, not only those in view")

    # Every row's content fits its fixed height, and no two rows overlap, at desktop and at phone width.
    def rows_problem():
        return js("""
            const rows = [...document.querySelectorAll('#queue li')];
            for (const row of rows) {
              if (row.scrollHeight > row.clientHeight + 1) return row.dataset.id + ' needs ' + row.scrollHeight +
                ' px of ' + row.clientHeight;
            }
            const boxes = rows.map((r) => r.getBoundingClientRect()).sort((a, b) => a.top - b.top);
            for (let i = 1; i < boxes.length; i++) if (boxes[i].top < boxes[i - 1].bottom - 1) return 'rows overlap';
            return null;""")
    if rows_problem():
        fail(f"queue rows at desktop width: {rows_problem()}")

    # The focus stays on a queue row's button while the row scrolls out of view and back, and the row is kept up
    # to date meanwhile.
    js("document.querySelector(`#queue li[data-id='many-3'] button`).focus()")
    js("const view = document.getElementById('queue-view'); view.scrollTop = view.scrollHeight;")
    wait("the last rows after scrolling", lambda: js(
        "return !!document.querySelector(`#queue li[data-id='many-2999']`)"))
    if js("return document.querySelectorAll('#queue li').length") >= 100:
        fail("scrolling to the end of the queue left the rows above in the page")
    js("remember({id: 'many-3', title: 'Song 3', artist: 'Many', status: 'paused', receivedBytes: 500, "
       "expectedBytes: 1000}); schedule();")
    wait("the focused row, out of view, to show its pause",
         lambda: js("return document.querySelector(`#queue li[data-id='many-3'] .state`).textContent") == "paused")
    js("document.getElementById('queue-view').scrollTop = 0;")
    wait("the first rows again", lambda: js("return !!document.querySelector(`#queue li[data-id='many-0']`)"))
    if js("return document.activeElement.closest('li') && document.activeElement.closest('li').dataset.id") != "many-3":
        fail("the focus left the queue row while it scrolled out of view and back")
    if js("return document.activeElement.textContent") not in ("Resume", "Cancel"):
        fail("the focused row's buttons were not brought up to date")

    # Across the phone breakpoint the rows are laid out again at their new height.
    driver.set_window_size(390, 844)
    wait("the phone layout's rows", lambda: js(
        "const r = document.querySelector('#queue li'); return r && r.getBoundingClientRect().height > 120;"))
    wait("every queue row to fit at phone width", lambda: rows_problem() is None)
    driver.set_window_size(1280, 1000)
    print("OK", flush=True)
finally:
    driver.quit()
