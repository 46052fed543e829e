#!/usr/bin/env python3
"""The dashboard of one server of a fleet (issue 20 with issue 18): a node's state, and each
observer's view of it as that server shows them, this server's first. FleetHealthTests runs this
while the node fails its check from one server only.

    fleet_views.py --api URL --token T --screenshots DIR --node n1 --state up --seen "s0 down, s1 up, s2 up"
"""
import argparse

from dashboard import fail, node_state, ok, shot, signed_in_page, text_of


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--screenshots", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--state", required=True, help="the fleet's verdict the page must show")
    p.add_argument("--seen", required=True, help="the observers' views, as the page words them")
    a = p.parse_args()

    def check(driver, wait):
        cell = f'#nodes-table tr[data-node="{a.node}"] [data-observers]'
        try:
            wait.until(lambda d: node_state(d, a.node) == a.state and text_of(d, cell) == "seen: " + a.seen)
        except Exception:
            fail(f"{a.node} is {node_state(driver, a.node)} on the map, its views {text_of(driver, cell)!r}")
        title = text_of(driver, f'#nodes-layer [data-node="{a.node}"] title') or ""
        if a.seen not in title:
            fail(f"the map's title for {a.node} is {title!r}")
        ok(f"{a.node} is {a.state}; the page shows each observer's view: {a.seen}")
        shot(driver, a, "fleet-views")

    signed_in_page(a, a.token, check)


if __name__ == "__main__":
    main()
