#!/usr/bin/python3
"""The dashboard's time to first render in headless Chromium (tools/bench-ui.sh): the page loaded
with the token already given for the tab, from navigation to every node drawn in its state.
Prints the median of five loads as two table cells and a row end, for bench-ui.sh."""
import argparse
import statistics
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

p = argparse.ArgumentParser()
p.add_argument("--api", required=True)
p.add_argument("--token", required=True)
p.add_argument("--nodes", type=int, required=True)
a = p.parse_args()

options = webdriver.ChromeOptions()
for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]:
    options.add_argument(flag)
options.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
try:
    driver.get(a.api + "/ui/")
    driver.execute_script("sessionStorage.setItem('nearcast-token', arguments[0])", a.token)
    times = []
    for _ in range(5):
        driver.get(a.api + "/ui/")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            drawn = driver.execute_script(
                "return [document.querySelectorAll('#nodes-layer [data-state=up]').length, performance.now()]")
            if drawn[0] >= a.nodes:
                times.append(drawn[1])
                break
            time.sleep(0.005)
        else:
            raise SystemExit("the page did not draw %d nodes within 30 s" % a.nodes)
    print("time to first render, %d nodes (navigation to every node drawn, median of 5) | %.0f ms |"
          % (a.nodes, statistics.median(times)))
finally:
    driver.quit()
