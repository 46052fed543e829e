#!/usr/bin/env python3
"""make bench-catalog (issue 33): a catalog zone (RFC 9432) followed by nearcast beside Knot.

For each size (MEMBERS, member zones), one Knot primary serves that many small zones (an SOA, an NS
and www's A each) and a catalog it makes of them (`catalog-role: generate`). Then nearcastd
(`catalog: consume`) and a second Knot (`catalog-role: interpret`), each started with nothing,
follow the catalog: for each, the time from its start to answering www in every member zone (asked
in the catalog's order, one after another, each until it answers), and its peak RSS by then
(VmHWM). Last, ADDS zones added one at a time to the primary's config (`knotc reload`): each timed
from the reload to www of the new zone answered by each follower, told by the primary's NOTIFY of
the catalog. Everything listens on 127.0.0.1. Results go to stdout and into BENCHMARKS.md between
the bench-catalog markers.
"""
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_transfer", os.path.join(ROOT, "tools/bench-transfer.py"))
transfer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(transfer)
scale = transfer.scale

MEMBERS = [int(s) for s in os.environ.get("MEMBERS", "1000 10000").split()]
ADDS = int(os.environ.get("ADDS", "5"))
CATALOG = "catalog.bench."


def low_port():
    """A free port below the ephemeral range (32768-60999): ten thousand transfers leave as many
    connections in TIME_WAIT there, and a server started after them could not bind."""
    return scale.free_port(10000, 30000)


def member(i):
    return f"m{i}.bench."


def write_member(d, i):
    o = member(i)
    with open(f"{d}/{o}zone", "w") as f:
        f.write(f"$ORIGIN {o}\n@ 300 IN SOA ns hostmaster 1 3600 600 1209600 300\n@ 300 IN NS ns\n"
                f"ns 300 IN A 192.0.2.53\nwww 300 IN A 192.0.2.{i % 250 + 1}\n")


def primary_conf(d, port, members, notify_ports):
    remotes = "".join(f"  - id: follower{j}\n    address: 127.0.0.1@{p}\n" for j, p in enumerate(notify_ports))
    notify = ", ".join(f"follower{j}" for j in range(len(notify_ports)))
    zones = "".join(f"  - domain: {member(i)}\n    file: {member(i)}zone\n    catalog-role: member\n"
                    f"    catalog-zone: {CATALOG}\n" for i in members)
    with open(f"{d}/knot.conf", "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}/db\n"
                f"remote:\n{remotes}"
                f"acl:\n  - id: local\n    address: 127.0.0.1\n    action: transfer\n"
                f"template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n    acl: local\n"
                f"    semantic-checks: off\n"
                f"zone:\n  - domain: {CATALOG}\n    catalog-role: generate\n    notify: [{notify}]\n{zones}"
                f"log:\n  - target: stderr\n    any: error\n")


def nearcast_follower(work, primary, port):
    d = f"{work}/nc"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/nc.yaml", "w") as f:
        f.write(f'listen: ["127.0.0.1:{port}"]\nstate-dir: {d}/state\n'
                f'zones: [{{ origin: {CATALOG}, catalog: consume, primaries: ["127.0.0.1:{primary}"] }}]\n')
    log = open(f"{d}/nc.log", "w")
    return subprocess.Popen([transfer.NEARCASTD, "--config", f"{d}/nc.yaml"], stdout=log, stderr=log)


def knot_follower(work, primary, port):
    d = f"{work}/knot-follower"
    os.makedirs(f"{d}/db", exist_ok=True)
    with open(f"{d}/knot.conf", "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}/db\n"
                f"remote:\n  - id: primary\n    address: 127.0.0.1@{primary}\n"
                f"acl:\n  - id: notify\n    address: 127.0.0.1\n    action: notify\n"
                f"template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n"
                f"  - id: member\n    storage: {d}\n    zonefile-sync: -1\n    master: primary\n    acl: notify\n"
                f"zone:\n  - domain: {CATALOG}\n    master: primary\n    acl: notify\n    catalog-role: interpret\n"
                f"    catalog-template: member\n"
                f"log:\n  - target: stderr\n    any: error\n")
    return subprocess.Popen(["knotd", "-c", f"{d}/knot.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def all_served(p, port, members, deadline_s):
    start = time.monotonic()
    for i in members:
        if p.poll() is not None:
            raise RuntimeError(f"the follower on port {port} exited ({p.returncode})")
        scale.wait_answer(port, f"www.{member(i)}", deadline_s=max(1, deadline_s - (time.monotonic() - start)))
    return time.monotonic() - start


def run(n):
    work = tempfile.mkdtemp(prefix=f"nc-catalog-{n}-")
    pd = f"{work}/primary"
    os.makedirs(f"{pd}/db", exist_ok=True)
    for i in range(n + ADDS):
        write_member(pd, i)
    primary_port, nc_port, knot_port = low_port(), low_port(), low_port()
    primary_conf(pd, primary_port, range(n), [nc_port, knot_port])
    primary = subprocess.Popen(["knotd", "-c", f"{pd}/knot.conf"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    followers = {}
    out = {"n": n}
    try:
        scale.wait_answer(primary_port, f"www.{member(n - 1)}", deadline_s=600)
        # Knot answers its catalog by transfer only (a query is REFUSED).
        deadline = time.monotonic() + 600
        while f"{member(n - 1)}" not in subprocess.run(
                ["kdig", "@127.0.0.1", "-p", str(primary_port), CATALOG, "AXFR", "+short"],
                capture_output=True, text=True, timeout=600).stdout:
            if time.monotonic() > deadline:
                raise RuntimeError("the primary's catalog is not served")
            time.sleep(0.05)
        for label, start, port in (("nearcast", nearcast_follower, nc_port), ("knot", knot_follower, knot_port)):
            t0 = time.monotonic()
            p = start(work, primary_port, port)
            followers[label] = p
            all_served(p, port, range(n), 600)
            out[label] = {"seconds": time.monotonic() - t0,
                          "peak": sum(scale.rss_mib(x, "VmHWM") for x in transfer.processes(p.pid))}
            print(n, label, out[label], flush=True)
        times = {"nearcast": [], "knot": []}
        for k in range(ADDS):
            primary_conf(pd, primary_port, range(n + k + 1), [nc_port, knot_port])
            pollers = {label: transfer.poller("127.0.0.1", port, f"www.{member(n + k)}",
                                              f"192.0.2.{(n + k) % 250 + 1}")
                       for label, port in (("nearcast", nc_port), ("knot", knot_port))}
            t0 = time.monotonic()
            transfer.knotc(f"{pd}/knot.conf", "reload")
            for label, q in pollers.items():
                answered = float(q.communicate(timeout=180)[0].strip())
                times[label].append(answered - t0)
        out["add"] = times
        print(n, "zone added, reload to served", times, flush=True)
    finally:
        for p in list(followers.values()) + [primary]:
            transfer.stop(p)
        shutil.rmtree(work, ignore_errors=True)
    return out


def main():
    results = [run(n) for n in MEMBERS]

    def ms(xs):
        xs = sorted(xs)
        return f"{statistics.median(xs) * 1000:.0f} / {xs[-1] * 1000:.0f}"

    lines = [
        "<!-- bench-catalog:start (written by tools/bench-catalog.py; do not edit by hand) -->",
        "A catalog made by one Knot primary, followed by nearcastd and by a second Knot, each started empty: "
        f"start to answering www in every member zone, and peak RSS by then; then {ADDS} zones added to the "
        "primary's config one at a time (`knotc reload`), each from the reload to served, told by the catalog's "
        "NOTIFY.",
        "",
        "| member zones | | nearcast | Knot |",
        "|---:|---|---:|---:|",
    ]
    for r in results:
        c, k = r["nearcast"], r["knot"]
        lines += [
            f"| {r['n']:,} | start to every member served (s) | {c['seconds']:.2f} | {k['seconds']:.2f} |",
            f"| | peak RSS by then (MiB) | {c['peak']:.0f} | {k['peak']:.0f} |",
            f"| | a zone added: reload to served, median / max (ms) | {ms(r['add']['nearcast'])} "
            f"| {ms(r['add']['knot'])} |",
        ]
    lines.append("<!-- bench-catalog:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-catalog"], input=table, text=True,
                   check=True)


if __name__ == "__main__":
    if not os.access(transfer.NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    main()
