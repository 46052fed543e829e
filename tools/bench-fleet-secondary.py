#!/usr/bin/env python3
"""make bench-fleet-secondary (issue 33): a secondary zone of a fleet of SERVERS nearcastd sharing one
etcd, beside a Knot secondary of the same primary, in the same run.

For each size (SIZES, names; the zone bench-scale generates), one Knot primary serves the zone,
journals its changes and tells every secondary of them (NOTIFY). The zone is declared in the store
as a secondary of that Knot (`nearcast store import` of a config naming its primaries), and SERVERS
nearcastd are started on the store with nothing: one of them takes the fleet's transfer duty,
transfers the zone by AXFR and writes it into the store, and every one serves it from there. Then:
  - start to every server answering the zone's last name, and a Knot secondary's start to the same
    (started after the fleet, alone, so the two do not share the cores);
  - each nearcastd's peak RSS by then (VmHWM), etcd's database size;
  - CHANGES changes made in the primary with knotc's transaction (one name's address each), each
    timed from the commit to the new address answered by every server of the fleet (the last of
    them) and by the Knot secondary: the holder's IXFR, its write of the changed RRsets to the
    store, every server's watch;
  - one change of BULK names (new names, one knotc transaction), timed the same to the last of
    them answered: more RRsets than one etcd transaction holds, written as an import of them.
Everything listens on 127.0.0.1. Results go to stdout and into BENCHMARKS.md between the
bench-fleet-secondary markers.
"""
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_transfer", os.path.join(ROOT, "tools/bench-transfer.py"))
transfer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(transfer)
scale = transfer.scale

SIZES = [int(s) for s in os.environ.get("SIZES", "100000 1000000").split()]
SERVERS = int(os.environ.get("SERVERS", "3"))
CHANGES = int(os.environ.get("CHANGES", "10"))
BULK = int(os.environ.get("BULK", "1000"))
ORIGIN = scale.ORIGIN
NEARCAST = os.path.join(os.path.dirname(scale.NEARCASTD), "nearcast")


def etcd(work):
    """etcd with its data in WORK/etcd; its process and client port."""
    port, peer = scale.free_port(), scale.free_port()
    log = open(f"{work}/etcd.log", "w")
    p = subprocess.Popen(
        ["etcd", "--name", "bench", "--data-dir", f"{work}/etcd", "--listen-client-urls", f"http://127.0.0.1:{port}",
         "--advertise-client-urls", f"http://127.0.0.1:{port}", "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"bench=http://127.0.0.1:{peer}", "--quota-backend-bytes", str(8 << 30)],
        stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return p, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("etcd did not start")


def etcd_db_mib(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith("etcd_mvcc_db_total_size_in_bytes"):
            return float(line.split()[1]) / 2**20
    return 0


def primary(work, zone, notify):
    """Knot serving ZONE, its changes journaled, telling each port of NOTIFY; process, port, conf."""
    port = scale.free_port()
    d = f"{work}/primary"
    os.makedirs(d, exist_ok=True)
    remotes = "".join(f"  - id: s{i}\n    address: 127.0.0.1@{p}\n" for i, p in enumerate(notify))
    conf = f"{d}/knot.conf"
    with open(conf, "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}\n"
                f"remote:\n{remotes}"
                f"acl:\n  - id: local\n    address: 127.0.0.1\n    action: transfer\n"
                f"template:\n  - id: default\n    storage: {os.path.dirname(zone)}\n"
                f"    zonefile-sync: -1\n    journal-content: changes\n    semantic-checks: off\n"
                f"zone:\n  - domain: {ORIGIN}\n    file: {os.path.basename(zone)}\n    acl: local\n"
                f"    notify: [{', '.join(f's{i}' for i in range(len(notify)))}]\n")
    p = subprocess.Popen(["knotd", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, port, conf


def server(work, i, port, etcd_port):
    d = f"{work}/nc{i}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/nc.yaml", "w") as f:
        f.write(f'listen: ["127.0.0.1:{port}"]\nstate-dir: {d}/state\n'
                f'store:\n  etcd: {{ endpoints: ["http://127.0.0.1:{etcd_port}"] }}\n  server: s{i}\n')
    log = open(f"{d}/nc.log", "w")
    return subprocess.Popen([scale.NEARCASTD, "--config", f"{d}/nc.yaml", "--log-level", "info"], stdout=log,
                            stderr=log)


def log_tail(work, i):
    return open(f"{work}/nc{i}/nc.log").read()[-3000:]


def run(work, zone, n):
    procs = []
    try:
        store, etcd_port = etcd(work)
        procs.append(store)
        ports = [scale.free_port() for _ in range(SERVERS)]
        knot2_port = scale.free_port()
        knot1, primary_port, conf = primary(work, zone, ports + [knot2_port])
        procs.append(knot1)
        last = f"n{n - 1}.{ORIGIN}"
        scale.wait_answer(primary_port, last)
        with open(f"{work}/seed.yaml", "w") as f:
            f.write(f'zones: [{{ origin: {ORIGIN}, primaries: ["127.0.0.1:{primary_port}"] }}]\n'
                    f'store: {{ etcd: {{ endpoints: ["http://127.0.0.1:{etcd_port}"] }} }}\n')
        subprocess.run([NEARCAST, "store", "import", f"{work}/seed.yaml"], check=True, capture_output=True,
                       timeout=120)
        t0 = time.monotonic()
        fleet = [server(work, i, ports[i], etcd_port) for i in range(SERVERS)]
        procs += fleet
        for i, port in enumerate(ports):
            try:
                scale.wait_answer(port, last, deadline_s=3600)
            except RuntimeError:
                raise RuntimeError(f"server {i} did not serve the zone; its log ends:\n{log_tail(work, i)}")
        fleet_seconds = time.monotonic() - t0
        peaks = [scale.rss_mib(p.pid, "VmHWM") for p in fleet]
        db = etcd_db_mib(etcd_port)
        holders = [i for i in range(SERVERS) if "now transfers" in open(f"{work}/nc{i}/nc.log").read()]
        print(n, "fleet served", fleet_seconds, "peaks", peaks, "etcd MiB", db, "holders", holders, flush=True)

        t0 = time.monotonic()
        knot2 = transfer.notified_knot_secondary(f"{work}/knot-secondary", knot2_port, primary_port)
        procs.append(knot2)
        scale.wait_answer(knot2_port, last, deadline_s=3600)
        knot_seconds = time.monotonic() - t0
        knot_peak = scale.rss_mib(knot2.pid, "VmHWM")
        print(n, "knot secondary served", knot_seconds, knot_peak, flush=True)

        times = {"fleet": [], "knot": []}
        for k in range(CHANGES):
            name, addr = f"n{(k + 1) * (n // (CHANGES + 1))}.{ORIGIN}", f"203.0.113.{k + 1}"
            polls = [transfer.poller("127.0.0.1", p, name, addr) for p in ports]
            knot_poll = transfer.poller("127.0.0.1", knot2_port, name, addr)
            time.sleep(0.2)  # the pollers started and asking
            t0 = time.monotonic()
            transfer.knotc(conf, "zone-begin", ORIGIN)
            transfer.knotc(conf, "zone-unset", ORIGIN, name, "A")
            transfer.knotc(conf, "zone-set", ORIGIN, name, "300", "A", addr)
            transfer.knotc(conf, "zone-commit", ORIGIN)
            served = []
            for i, p in enumerate(polls):
                out, _ = p.communicate(timeout=300)
                if p.returncode != 0:
                    raise RuntimeError(f"server {i} did not serve {name} {addr}; its log ends:\n{log_tail(work, i)}")
                served.append(float(out) - t0)
            out, _ = knot_poll.communicate(timeout=300)
            if knot_poll.returncode != 0:
                raise RuntimeError(f"the Knot secondary did not serve {name} {addr}")
            times["fleet"].append(max(served))
            times["knot"].append(float(out) - t0)
        # One change of BULK new names, timed from the commit to the last name answered.
        transfer.knotc(conf, "zone-begin", ORIGIN)
        for k in range(BULK):
            transfer.knotc(conf, "zone-set", ORIGIN, f"bulk{k}", "300", "A", f"198.51.100.{k % 250}")
        name, addr = f"bulk{BULK - 1}.{ORIGIN}", f"198.51.100.{(BULK - 1) % 250}"
        polls = [transfer.poller("127.0.0.1", p, name, addr) for p in ports]
        knot_poll = transfer.poller("127.0.0.1", knot2_port, name, addr)
        time.sleep(0.2)
        t0 = time.monotonic()
        transfer.knotc(conf, "zone-commit", ORIGIN)
        bulk = []
        for i, p in enumerate(polls + [knot_poll]):
            out, _ = p.communicate(timeout=600)
            if p.returncode != 0:
                raise RuntimeError(f"poller {i} did not see {name} {addr}")
            bulk.append(float(out) - t0)
        times["bulk_fleet"], times["bulk_knot"] = max(bulk[:-1]), bulk[-1]
        whole_reads = [open(f"{work}/nc{i}/nc.log").read().count("by=store@") for i in range(SERVERS)]
        return {"fleet": fleet_seconds, "peaks": peaks, "db": db, "holders": holders, "knot": knot_seconds,
                "knot_peak": knot_peak, "times": times, "reads": whole_reads}
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                transfer.stop(p)


def main():
    results = {}
    for n in SIZES:
        work = tempfile.mkdtemp(prefix=f"nc-fleet-secondary-{n}-")
        try:
            zone = f"{work}/zone"
            scale.write_zone(zone, n)
            results[n] = run(work, zone, n)
            print(n, results[n], flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def ms(xs):
        xs = sorted(xs)
        return f"{statistics.median(xs) * 1000:.0f} / {xs[-1] * 1000:.0f}"

    lines = [
        "<!-- bench-fleet-secondary:start (written by tools/bench-fleet-secondary.py; do not edit by hand) -->",
        f"A secondary zone of a fleet of {SERVERS} nearcastd sharing one etcd (one transfers, the store carries it), "
        "beside a Knot secondary of the same Knot primary; all on one host of two cores.",
        "",
        "| names | | the fleet | Knot secondary |",
        "|---:|---|---:|---:|",
    ]
    for n, r in results.items():
        lines += [
            f"| {n:,} | start to serving the zone: every server / Knot (s) | {r['fleet']:.2f} | {r['knot']:.2f} |",
            f"| | peak RSS by then (MiB): each server / Knot | {', '.join(f'{p:.0f}' for p in r['peaks'])} "
            f"| {r['knot_peak']:.0f} |",
            f"| | etcd's database (MiB) | {r['db']:.0f} | |",
            f"| | one change, commit to served by every server / Knot, median / max of {CHANGES} (ms) "
            f"| {ms(r['times']['fleet'])} | {ms(r['times']['knot'])} |",
            f"| | one change of {BULK:,} new names, commit to served by every server / Knot (ms) "
            f"| {r['times']['bulk_fleet'] * 1000:.0f} | {r['times']['bulk_knot'] * 1000:.0f} |",
            f"| | reads of the whole store per server in all (the AXFR's import: 1 each) "
            f"| {', '.join(str(x) for x in r['reads'])} | |",
        ]
    lines.append("<!-- bench-fleet-secondary:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-fleet-secondary"], input=table,
                   text=True, check=True)


if __name__ == "__main__":
    if not os.access(scale.NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    main()
