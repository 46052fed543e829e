#!/usr/bin/env python3
"""The dashboard of a server with the XDP fast path (issue 20): XDP's verdicts charted by path.
XDPEndToEndTests sends hot queries across the veth pair first (kxdpgun), then runs this in the
server's namespace, where the API listens.

    xdp_charts.py --api URL --token T --screenshots DIR --answered-at-least N
"""
import argparse

from dashboard import chart_rate, fail, ok, shot, signed_in_page


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--screenshots", required=True)
    p.add_argument("--answered-at-least", required=True, type=int, help="the peak rate XDP answered at, per second")
    a = p.parse_args()

    def check(driver, wait):
        # The history the page gets at once holds the seconds of the load.
        try:
            wait.until(lambda d: chart_rate(d, "XDP answered") >= a.answered_at_least)
        except Exception:
            fail(f"XDP answered peaks at {chart_rate(driver, 'XDP answered')}/s on the page")
        for series in ["XDP geo", "passed to the slow path", "limited", "slow path NOERROR"]:
            if not driver.find_elements("css selector", f'#charts [data-series="{series}"] polyline'):
                fail(f"no chart of {series!r}")
        ok(f"XDP answered peaks at {chart_rate(driver, 'XDP answered')}/s on the page, beside the other paths")
        shot(driver, a, "xdp-charts")

    signed_in_page(a, a.token, check)


if __name__ == "__main__":
    main()
