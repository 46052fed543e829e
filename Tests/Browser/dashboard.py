#!/usr/bin/env python3
"""Drives the dashboard (/ui/) of a running nearcastd in a real headless Chromium, through
WebDriver (Debian's chromium, chromium-driver and python3-selenium). DashboardTests starts the
daemon, runs this with its API port and tokens, and checks the audit log after it.

Each step prints `ok: ...`; the first failure prints `FAILED: ...` and exits 1. Screenshots go to
--screenshots.
"""
import argparse
import json
import os
import socket
import struct
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT = 10  # seconds for anything the page should show


def fail(message):
    print("FAILED: " + message, flush=True)
    sys.exit(1)


def ok(message):
    print("ok: " + message, flush=True)


def api(base, method, path, token, body=None):
    request = urllib.request.Request(base + path, method=method, data=body)
    request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def query(port, name, qtype=1, qid=1):
    """One DNS query over UDP to 127.0.0.1:port, sent up to three times as a resolver would; the
    reply's rcode, or None without a reply."""
    wire = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    wire += b"".join(bytes([len(l)]) + l.encode() for l in name.strip(".").split(".")) + b"\0"
    wire += struct.pack("!HH", qtype, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        for _ in range(3):
            s.sendto(wire, ("127.0.0.1", port))
            try:
                reply = s.recv(4096)
            except socket.timeout:
                continue
            if reply[:2] == wire[:2]:
                return reply[3] & 0x0F
    return None


def text_of(driver, css):
    """The text of the first element `css` selects, read in one step (the page redraws as events
    come, so an element found a moment before may be gone), or None."""
    return driver.execute_script("const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
                                 css)


def audit_row(driver, wait, match):
    """The text of the page's last-changes row `match` selects (`[data-action=...]...`), once the
    server has pushed it; fails with the rows the page shows when it does not come."""
    entry = "#audit-table tr" + match
    try:
        wait.until(lambda d: text_of(d, entry))
    except Exception:
        fail(f"the page's last changes are {text_of(driver, '#audit-table tbody')!r}")
    return text_of(driver, entry)


def chart_rate(driver, series):
    """The peak rate a chart's label states (`LABEL: N/s (peak M/s)`), or 0."""
    # Read in one step: the page redraws its charts each second, so a found element may be stale.
    text = text_of(driver, f'#charts [data-series="{series}"] div') or ""
    return int(text.split("peak ")[1].split("/s")[0]) if "peak " in text else 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", required=True, help="http://127.0.0.1:PORT")
    p.add_argument("--read-token", required=True)
    p.add_argument("--write-token", required=True)
    p.add_argument("--screenshots", required=True)
    p.add_argument("--nodes", required=True, help="the configured node ids, comma-separated")
    p.add_argument("--dns-port", required=True, type=int, help="the daemon's DNS port (127.0.0.1)")
    a = p.parse_args()
    os.makedirs(a.screenshots, exist_ok=True)
    nodes = a.nodes.split(",")

    driver, wait = browser()
    try:
        run(driver, wait, a, nodes)
    finally:
        driver.quit()


def signed_in_page(a, token, check):
    """Signs in to a.api's dashboard with `token` in a new headless browser and runs
    `check(driver, wait)`, then prints PASSED; the browser is closed whatever happens."""
    os.makedirs(a.screenshots, exist_ok=True)
    driver, wait = browser()
    try:
        sign_in(driver, wait, a, token)
        check(driver, wait)
    finally:
        driver.quit()
    print("PASSED", flush=True)


def browser():
    """Headless Chromium through chromedriver, and a wait of WAIT seconds."""
    options = webdriver.ChromeOptions()
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,1000", "--no-first-run", "--disable-extensions"]:
        options.add_argument(flag)
    options.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(20)
    return driver, WebDriverWait(driver, WAIT)


def shot(driver, a, name):
    driver.save_screenshot(os.path.join(a.screenshots, name + ".png"))


def node_state(driver, node):
    """The state the map shows for `node`, read in one step (the page redraws the map as events come)."""
    return driver.execute_script(
        "const e = document.querySelector(`#nodes-layer [data-node=\"${arguments[0]}\"]`);"
        " return e ? e.dataset.state : null;", node)


def sign_in(driver, wait, a, token):
    driver.get(a.api + "/ui/")
    wait.until(lambda d: d.find_element(By.ID, "token").is_displayed())
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    wait.until(lambda d: d.find_element(By.ID, "dashboard").is_displayed())


def run(driver, wait, a, nodes):
    # A wrong token is refused on the page.
    driver.get(a.api + "/ui/")
    driver.find_element(By.ID, "token").send_keys("not-a-token")
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    wait.until(lambda d: "not valid" in d.find_element(By.ID, "signin-error").text)
    ok("a token that is not valid is refused")

    # Sign in with the write token: every configured node on the map, up, with its word.
    started = time.monotonic()
    sign_in(driver, wait, a, a.write_token)
    try:
        wait.until(lambda d: all(node_state(d, n) == "up" for n in nodes))
    except Exception:
        fail("the map shows %s" % {n: node_state(driver, n) for n in nodes})
    ok("signed in; the map shows %s up (%.2f s)" % (", ".join(nodes), time.monotonic() - started))
    labels = driver.execute_script(  # in one step: an event may redraw the map between two
        "return [...document.querySelectorAll('#nodes-layer text')].map((e) => e.textContent)")
    if not all(any(l == f"{n} up" for l in labels) for n in nodes):
        fail("the map's labels are %s" % labels)
    wait.until(lambda d: "live" == d.find_element(By.ID, "live").text)
    world = driver.find_element(By.ID, "world").get_attribute("d") or ""
    if len(world) < 10000:
        fail("the world outline is %d bytes" % len(world))
    ok("the world is drawn and the page follows the live events")
    # The zones: the file's, with its serial; a secondary whose primary does not answer, not
    # served yet, with why.
    def zone_row(d, origin):
        rows = d.find_elements(By.CSS_SELECTOR, f'#zones-table tr[data-zone="{origin}"]')
        return [c.text for c in rows[0].find_elements(By.TAG_NAME, "td")] if rows else None
    try:
        wait.until(lambda d: (zone_row(d, "example.test.") or [""])[1:2] == ["2026112201"]
                   and "refused" in (zone_row(d, "other.test.") or [""])[-1].lower())
    except Exception:
        fail("the zones table shows %s and %s" % (zone_row(driver, "example.test."), zone_row(driver, "other.test.")))
    other = zone_row(driver, "other.test.")
    if "secondary of 127.0.0.1:9" not in other[3] or "not transferred yet" not in other[3]:
        fail(f"the secondary's row is {other}")
    ok("the zones table shows the zone's serial, and the secondary not transferred yet with its last error")
    # The charts: the slow path's replies by rcode and what was limited (this daemon runs without
    # XDP, whose verdicts by path are charted only with the fast path on).
    for series in ["limited", "slow path NOERROR", "slow path NXDOMAIN", "slow path other rcodes"]:
        try:
            wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#charts [data-series="{series}"] polyline'))
        except Exception:
            fail(f"no chart of {series!r}: {driver.find_element(By.ID, 'charts').text!r}")
    # Queries answered NOERROR and NXDOMAIN show in their charts within a few samples.
    for i in range(40):
        www, nope = query(a.dns_port, "www.example.test", qid=i), query(a.dns_port, "nope.example.test", qid=i)
        if www != 0 or nope != 3:
            fail(f"the daemon answered www with rcode {www} and nope with {nope} (NOERROR 0 and NXDOMAIN 3 expected)")
    try:
        wait.until(lambda d: chart_rate(d, "slow path NOERROR") >= 10 and chart_rate(d, "slow path NXDOMAIN") >= 10)
    except Exception:
        fail("the slow path's charts read %r" % driver.find_element(By.ID, "charts").text)
    ok("the charts show the slow path's replies by rcode as they are sent (peaks %d/s NOERROR, %d/s NXDOMAIN)"
       % (chart_rate(driver, "slow path NOERROR"), chart_rate(driver, "slow path NXDOMAIN")))
    if driver.find_elements(By.CSS_SELECTOR, '#charts [data-series="XDP answered"]'):
        fail("XDP charts are drawn for a daemon without the fast path")
    shot(driver, a, "1-signed-in")

    # A node fails (its agent reports it down): the page turns it down without a reload.
    failing = nodes[1]
    marker = driver.execute_script("window.__sameDocument = true; return 1")
    status, body = api(a.api, "POST", f"/v1/nodes/{failing}/report", a.write_token,
                       json.dumps({"ok": False, "detail": "failed by the browser test"}).encode())
    if status != 200:
        fail(f"the report was refused: {status} {body!r}")
    started = time.monotonic()
    try:
        wait.until(lambda d: node_state(d, failing) == "down")
    except Exception:
        fail(f"{failing} is {node_state(driver, failing)} on the page after {WAIT} s")
    if not driver.execute_script("return window.__sameDocument === true") or marker != 1:
        fail("the page was reloaded")
    ok("%s turned down on the page %.2f s after it failed, without a reload" % (failing, time.monotonic() - started))
    row = driver.find_element(By.CSS_SELECTOR, f'#nodes-table tr[data-node="{failing}"] td.state').text
    if row != "down":
        fail(f"the table says {failing} is {row!r}")
    shot(driver, a, "2-node-down")

    # Explain a client: its location, candidates in order, the answer, drawn as routes.
    driver.find_element(By.ID, "explain-name").send_keys("geo.example.test")
    driver.find_element(By.ID, "explain-client").send_keys("198.51.100.7")
    driver.find_element(By.CSS_SELECTOR, "#explain-form button").click()
    wait.until(lambda d: d.find_elements(By.ID, "explain-answer"))
    answer = driver.find_element(By.ID, "explain-answer").text
    candidates = [e.get_attribute("data-candidate") for e in driver.find_elements(By.CSS_SELECTOR, "[data-candidate]")]
    routes = [e.get_attribute("data-answer") for e in driver.find_elements(By.CSS_SELECTOR, "#explain-layer [data-answer]")]
    status, body = api(a.api, "GET", "/v1/explain?name=geo.example.test&type=A&client=198.51.100.7", a.read_token)
    expected = json.loads(body)
    if candidates != [c["node"] for c in expected["candidates"]]:
        fail(f"the page lists {candidates}, the API {[c['node'] for c in expected['candidates']]}")
    if not all(addr in answer for addr in expected["answer"]) or len(routes) != len(expected["answer"]):
        fail(f"the page answers {answer!r} with routes to {routes}; the API {expected['answer']}")
    if failing in routes:
        fail(f"the failed node {failing} is drawn as an answer")
    ok("explain for 198.51.100.7: candidates %s, answer %s drawn to %s" % (candidates, expected["answer"], routes))
    shot(driver, a, "3-explain")

    # An operator picks how long to drain a node for; meanwhile another node is forced down from
    # elsewhere, and the table redraws as its time runs down: the choice stays.
    drained, forced = nodes[0], nodes[2]
    duration = driver.find_element(By.CSS_SELECTOR, f'select[data-duration="{drained}"]')
    Select(duration).select_by_value("3600")
    status, body = api(a.api, "POST", f"/v1/nodes/{forced}/force-down?for=600", a.write_token)
    if status != 200:
        fail(f"the force-down was refused: {status} {body!r}")
    left = f'#nodes-table tr[data-node="{forced}"] td:nth-child(4)'
    try:
        wait.until(lambda d: "s left" in (text_of(d, left) or ""))
        first = text_of(driver, left)
        wait.until(lambda d: text_of(d, left) != first)
    except Exception:
        fail(f"the table says {forced} is {text_of(driver, left)!r} after its force-down")
    try:
        kept = duration.get_attribute("value")
    except Exception as e:
        fail(f"the duration chosen for {drained} was thrown away by a redraw: {type(e).__name__}")
    if kept != "3600":
        fail(f"the duration chosen for {drained} reads {kept!r} after a redraw")
    ok(f"the duration chosen for {drained} outlives the table's redraws ({forced}: {text_of(driver, left)})")

    # Drain it for that hour from the page, confirmed.
    driver.find_element(By.CSS_SELECTOR, f'button[data-action="drain"][data-node="{drained}"]').click()
    alert = wait.until(lambda d: d.switch_to.alert)
    if "drain" not in alert.text or "3600" not in alert.text:
        fail(f"the confirmation says {alert.text!r}")
    alert.accept()
    try:
        wait.until(lambda d: node_state(d, drained) == "drained")
    except Exception:
        fail(f"{drained} is {node_state(driver, drained)} after the drain")
    result = driver.find_element(By.ID, "action-result").text
    if "audit log" not in result:
        fail(f"the page says {result!r} after the drain")
    # The audit log's new line reaches the page's last changes by itself (the server pushes it).
    line = audit_row(driver, wait, f'[data-action="drain"][data-target="{drained}"]')
    if "write" not in line or "done" not in line:
        fail(f"the audit entry on the page reads {line!r}")
    ok(f"{drained} drained from the page: {result}; the last changes show {line!r}")
    shot(driver, a, "4-drained")

    # A phone-sized screen: one column, nothing wider than the screen.
    driver.set_window_size(390, 844)
    time.sleep(0.3)  # a resize has no event to wait for; the layout is CSS only
    overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
    if overflow > 1:
        fail(f"on a phone-sized screen the page is {overflow} px too wide")
    ok("a phone-sized screen holds the page")
    shot(driver, a, "5-phone")
    driver.set_window_size(1280, 1000)

    # A read token sees no action buttons, and the API refuses the call anyway.
    driver.find_element(By.ID, "signout").click()
    sign_in(driver, wait, a, a.read_token)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#nodes-table tbody tr"))
    buttons = driver.find_elements(By.CSS_SELECTOR, "button[data-action]")
    if buttons:
        fail(f"a read token is offered {len(buttons)} action buttons")
    status, _ = api(a.api, "POST", f"/v1/nodes/{drained}/undrain", a.read_token)
    if status != 403:
        fail(f"the API answered {status} to a read token's undrain")
    ok("a read token is offered no actions, and the API refuses its undrain (403)")
    shot(driver, a, "6-read-only")
    print("PASSED", flush=True)


if __name__ == "__main__":
    main()
