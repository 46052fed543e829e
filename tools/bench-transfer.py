#!/usr/bin/env python3
"""make bench-transfer (issue 33): zone transfers out of nearcast beside Knot DNS and NSD serving the
same file.

For each size (SIZES, names; the zone bench-scale generates: an A at each name, an AAAA at every
fourth, MX and TXT at every tenth), each server is started on the file with transfers allowed to
127.0.0.1, and asked for the zone RUNS times by `kdig +noall +stats AXFR` (the same client for all
three, whose own parsing is part of every figure); for each server:
  - the AXFR's wall time, median of the runs, and the messages and bytes it took;
  - the server's CPU time for one AXFR (utime + stime from /proc, in ticks of 10 ms, summed over
    its processes, the median run's);
  - RSS after load, and its peak during the transfers (VmHWM, reset before them through
    /proc/PID/clear_refs), summed over the server's processes (NSD forks).
Then Knot as a secondary of each server (nearcast, Knot, NSD) takes the zone by AXFR: the time from
its start to answering the zone's last name, the AXFR in as a real secondary does it.
Everything listens on 127.0.0.1 only. Results go to stdout and into BENCHMARKS.md between the
bench-transfer markers.
"""
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
_spec = importlib.util.spec_from_file_location("bench_scale", os.path.join(ROOT, "tools/bench-scale.py"))
scale = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale)

SIZES = [int(s) for s in os.environ.get("SIZES", "100000 1000000").split()]
RUNS = int(os.environ.get("RUNS", "3"))
ORIGIN = scale.ORIGIN
NEARCASTD = scale.NEARCASTD


def processes(pid):
    """PID and its descendants (NSD's first process becomes xfrd, whose child is main, whose
    children serve)."""
    out = [pid]
    for child in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split():
        out += processes(int(child))
    return out


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def axfr(port, n):
    """One AXFR through kdig: (seconds, messages, bytes, records)."""
    t = time.monotonic()
    out = subprocess.run(
        ["kdig", "@127.0.0.1", "-p", str(port), "+noall", "+stats", ORIGIN, "AXFR"],
        capture_output=True, text=True, timeout=600)
    seconds = time.monotonic() - t
    m = re.search(r"Received (\d+) B \((\d+) messages, (\d+) records\)", out.stdout)
    if out.returncode != 0 or not m or "ERROR" in out.stdout:
        raise RuntimeError(f"AXFR from port {port} failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return seconds, int(m.group(2)), int(m.group(1)), int(m.group(3))


def measure(p, port, n):
    """The transfers of a server started as P, answering on PORT."""
    scale.wait_answer(port, f"n{n - 1}.{ORIGIN}")
    pids = processes(p.pid)
    rss = sum(scale.rss_mib(x) for x in pids)
    for x in pids:
        with open(f"/proc/{x}/clear_refs", "w") as f:
            f.write("5")  # VmHWM from here on
    runs = []
    for _ in range(RUNS):
        before = cpu_seconds(pids)
        seconds, messages, size, records = axfr(port, n)
        runs.append((seconds, cpu_seconds(pids) - before, messages, size, records))
    peak = sum(scale.rss_mib(x, "VmHWM") for x in pids)
    runs.sort()
    seconds, cpu, messages, size, records = runs[len(runs) // 2]
    return {"seconds": seconds, "cpu": cpu, "messages": messages, "bytes": size, "records": records,
            "rss": rss, "peak": peak}


def nearcast(work, zone, n):
    port = scale.free_port()
    with open(f"{work}/nc.yaml", "w") as f:
        f.write(f'listen: ["127.0.0.1:{port}"]\nzones: [{{ origin: {ORIGIN}, file: {zone}, allow-transfer: ["127.0.0.1"] }}]\n'
                f"state-dir: {work}/nc-state\n")
    p = subprocess.Popen([NEARCASTD, "--config", f"{work}/nc.yaml"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, port


def knot(work, zone, n, primary=None, name="knot"):
    """Knot serving ZONE, or (PRIMARY: a port) its secondary; its process and port."""
    port = scale.free_port()
    d = f"{work}/{name}"
    os.makedirs(d, exist_ok=True)
    conf = (f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}\n"
            f"acl:\n  - id: local\n    address: 127.0.0.1\n    action: transfer\n"
            f"template:\n  - id: default\n    storage: {d if primary else os.path.dirname(zone)}\n"
            f"    zonefile-sync: -1\n    journal-content: none\n    semantic-checks: off\n")
    if primary:
        conf += f"remote:\n  - id: primary\n    address: 127.0.0.1@{primary}\n"
        conf += f"zone:\n  - domain: {ORIGIN}\n    file: secondary.zone\n    master: primary\n"
    else:
        conf += f"zone:\n  - domain: {ORIGIN}\n    file: {os.path.basename(zone)}\n    acl: local\n"
    with open(f"{d}/knot.conf", "w") as f:
        f.write(conf)
    p = subprocess.Popen(["knotd", "-c", f"{d}/knot.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, port


def nsd(work, zone, n):
    port = scale.free_port()
    d = f"{work}/nsd"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/nsd.conf", "w") as f:
        f.write(
            f'server:\n  ip-address: 127.0.0.1@{port}\n  username: ""\n  chroot: ""\n  zonesdir: "{d}"\n'
            f'  pidfile: "{d}/nsd.pid"\n  database: ""\n  zonelistfile: "{d}/zone.list"\n'
            f'  xfrdfile: "{d}/xfrd.state"\n  xfrdir: "{d}"\n  server-count: 1\n  verbosity: 0\n'
            f"remote-control:\n  control-enable: no\nzone:\n  name: {ORIGIN}\n  zonefile: \"{zone}\"\n"
            f"  provide-xfr: 127.0.0.1 NOKEY\n")
    p = subprocess.Popen(["nsd", "-d", "-c", f"{d}/nsd.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, port


def stop(p):
    p.terminate()
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def secondary_pull(work, primary_port, n, label):
    """Knot as a secondary of the server at PRIMARY_PORT: start to the zone's last name answered."""
    t0 = time.monotonic()
    p, port = knot(work, None, n, primary=primary_port, name=f"secondary-of-{label}")
    try:
        scale.wait_answer(port, f"n{n - 1}.{ORIGIN}", deadline_s=1200)
        return time.monotonic() - t0
    finally:
        stop(p)
        shutil.rmtree(f"{work}/secondary-of-{label}", ignore_errors=True)


def main():
    results = {}
    for n in SIZES:
        work = tempfile.mkdtemp(prefix=f"nc-transfer-{n}-")
        try:
            zone = f"{work}/zone"
            scale.write_zone(zone, n)
            scale.warm_up(work, zone, n)
            r = {}
            for label, start in (("nearcast", nearcast), ("knot", knot), ("nsd", nsd)):
                p, port = start(work, zone, n)
                try:
                    r[label] = measure(p, port, n)
                    r[label]["pulled"] = secondary_pull(work, port, n, label)
                finally:
                    stop(p)
                print(n, label, r[label], flush=True)
            results[n] = r
        finally:
            shutil.rmtree(work, ignore_errors=True)
    lines = [
        "<!-- bench-transfer:start (written by tools/bench-transfer.py; do not edit by hand) -->",
        f"AXFR out, {RUNS} runs each (the median's figures), `kdig +noall +stats` as the client; then Knot as a "
        "secondary of each server, start to the zone's last name answered.",
        "",
        "| names | | nearcast | Knot | NSD |",
        "|---:|---|---:|---:|---:|",
    ]
    for n, r in results.items():
        c, k, d = r["nearcast"], r["knot"], r["nsd"]
        def cells(f):
            return " | ".join(f(x) for x in (c, k, d))

        lines += [
            f"| {n:,} | AXFR out, kdig's wall time (s) | " + cells(lambda x: f"{x['seconds']:.2f}") + " |",
            "| | the server's CPU for it (s) | " + cells(lambda x: f"{x['cpu']:.2f}") + " |",
            "| | messages; MiB | " + cells(lambda x: f"{x['messages']:,}; {x['bytes'] / 2**20:.1f}") + " |",
            "| | RSS after load, peak during the transfers (MiB) | "
            + cells(lambda x: f"{x['rss']:.0f}, {x['peak']:.0f}") + " |",
            "| | Knot as its secondary: start to serving the zone (s) | "
            + cells(lambda x: f"{x['pulled']:.2f}") + " |",
        ]
    lines.append("<!-- bench-transfer:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-transfer"], input=table, text=True,
                   check=True)


if __name__ == "__main__":
    if not os.access(NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    main()
