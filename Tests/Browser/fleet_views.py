#!/usr/bin/env python3
"""The dashboard of one server of a fleet (issue 20 with issue 18): a node's state, and each
observer's view of it as that server shows them, this server's first. FleetHealthTests runs this
while the node fails its check from one server only. Then a change taken by another server
reaches this server's page by itself, in its last changes, naming that server.

    fleet_views.py --api URL --token T --screenshots DIR --node n1 --state up --seen "s0 down, s1 up, s2 up" \
        --change-via URL --change-server s1
"""
import argparse

from dashboard import api, audit_row, fail, node_state, ok, shot, signed_in_page, text_of


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--api", required=True)
    p.add_argument("--token", required=True)
    p.add_argument("--screenshots", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--state", required=True, help="the fleet's verdict the page must show")
    p.add_argument("--seen", required=True, help="the observers' views, as the page words them")
    p.add_argument("--change-via", required=True, help="another server's API, which takes a change (an undrain)")
    p.add_argument("--change-server", required=True, help="that server's name in the store")
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

        status, body = api(a.change_via, "POST", f"/v1/nodes/{a.node}/undrain", a.token)
        if status != 200:
            fail(f"the undrain through {a.change_via} was refused: {status} {body!r}")
        line = audit_row(driver, wait, f'[data-action="undrain"][data-target="{a.node}"][data-server="{a.change_server}"]')
        ok(f"the undrain {a.change_server} took is in this server's last changes: {line!r}")

    signed_in_page(a, a.token, check)


if __name__ == "__main__":
    main()
