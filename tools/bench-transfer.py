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

Then the other way: each server (nearcast, Knot, NSD) as a secondary of one Knot primary takes the
zone by AXFR: start to serving its last name, and the secondary's peak RSS (VmHWM) by then.
Last, one change from NOTIFY to served: a Knot primary tells nearcastd (with its XDP fast path on
a veth pair) and a Knot secondary of each change made with knotc's transaction (CHANGES of them,
one name's address each); each change is timed from knotc's commit to the new address answered,
by nearcast's XDP (asked from the veth's other end, in a namespace of its own: the queries cross
XDP, whose answered counter is read before and after) and by the Knot secondary.
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
CHANGES = int(os.environ.get("CHANGES", "10"))
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


def nearcast_secondary(work, primary, n, port=None, extra="", listen=(), name="nc-secondary"):
    """nearcastd as a secondary of the Knot at PRIMARY, kept in a state directory of its own (in
    WORK/NAME: each starts with none)."""
    port = port or scale.free_port()
    d = f"{work}/{name}"
    os.makedirs(d, exist_ok=True)
    addresses = ", ".join(f'"{a}:{port}"' for a in ("127.0.0.1",) + tuple(listen))
    with open(f"{d}/nc.yaml", "w") as f:
        f.write(f"listen: [{addresses}]\nstate-dir: {d}/state\n"
                f'zones: [{{ origin: {ORIGIN}, primaries: ["127.0.0.1:{primary}"] }}]\n{extra}')
    log = open(f"{d}/nc.log", "w")
    p = subprocess.Popen([NEARCASTD, "--config", f"{d}/nc.yaml", "--log-level", "info"], stdout=log, stderr=log)
    return p, port


def nsd_secondary(work, primary, n):
    port = scale.free_port()
    d = f"{work}/nsd-secondary"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/nsd.conf", "w") as f:
        f.write(
            f'server:\n  ip-address: 127.0.0.1@{port}\n  username: ""\n  chroot: ""\n  zonesdir: "{d}"\n'
            f'  pidfile: "{d}/nsd.pid"\n  database: ""\n  zonelistfile: "{d}/zone.list"\n'
            f'  xfrdfile: "{d}/xfrd.state"\n  xfrdir: "{d}"\n  server-count: 1\n  verbosity: 0\n'
            f"remote-control:\n  control-enable: no\nzone:\n  name: {ORIGIN}\n  zonefile: \"{d}/secondary.zone\"\n"
            f"  request-xfr: AXFR 127.0.0.1@{primary} NOKEY\n  allow-notify: 127.0.0.1 NOKEY\n")
    p = subprocess.Popen(["nsd", "-d", "-c", f"{d}/nsd.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, port


def knot_secondary(work, primary, n):
    return knot(work, None, n, primary=primary, name="knot-secondary")


def notified_knot_secondary(d, port, primary_port):
    """Knot at PORT as a secondary of the server at PRIMARY_PORT, told of its changes by NOTIFY and
    taking them by IXFR (its data in D); its process."""
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/knot.conf", "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}\n"
                f"remote:\n  - id: primary\n    address: 127.0.0.1@{primary_port}\n"
                f"acl:\n  - id: notify\n    address: 127.0.0.1\n    action: notify\n"
                f"template:\n  - id: default\n    storage: {d}\n    zonefile-sync: -1\n"
                f"    journal-content: changes\n    semantic-checks: off\n"
                f"zone:\n  - domain: {ORIGIN}\n    file: secondary.zone\n    master: primary\n    acl: notify\n")
    return subprocess.Popen(["knotd", "-c", f"{d}/knot.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def transfer_in(work, zone, n):
    """Each server as a secondary of one Knot: start to its last name served, and its peak RSS."""
    primary, primary_port = knot(work, zone, n)
    out = {}
    try:
        scale.wait_answer(primary_port, f"n{n - 1}.{ORIGIN}")
        for label, start in (("nearcast", nearcast_secondary), ("knot", knot_secondary), ("nsd", nsd_secondary)):
            t0 = time.monotonic()
            p, port = start(work, primary_port, n)
            try:
                scale.wait_answer(port, f"n{n - 1}.{ORIGIN}", deadline_s=1200)
                seconds = time.monotonic() - t0
                peak = sum(scale.rss_mib(x, "VmHWM") for x in processes(p.pid))
                out[label] = {"seconds": seconds, "peak": peak}
            finally:
                stop(p)
            print(n, label, "as secondary", out[label], flush=True)
    finally:
        stop(primary)
    return out


def knotc(conf, *args):
    subprocess.run(["knotc", "-c", conf] + list(args), check=True, capture_output=True, timeout=600)


def poller(host, port, name, addr, ns=None):
    """A process, in namespace NS if given, that asks HOST:PORT for NAME until ADDR is answered and
    prints the CLOCK_MONOTONIC time it was (one clock for every namespace)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--poll", host, str(port), name, addr]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)


def notify_to_served(work, zone, n):
    """CHANGES changes made in a Knot primary, each timed from knotc's commit to answered by
    nearcast's XDP and by a Knot secondary, both told by NOTIFY."""
    nc_port, knot2_port = scale.free_port(), scale.free_port()
    port = scale.free_port()
    d = f"{work}/primary"
    os.makedirs(d, exist_ok=True)
    conf = f"{d}/knot.conf"
    with open(conf, "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}\n"
                f"remote:\n  - id: nc\n    address: 127.0.0.1@{nc_port}\n"
                f"  - id: knot2\n    address: 127.0.0.1@{knot2_port}\n"
                f"acl:\n  - id: local\n    address: 127.0.0.1\n    action: transfer\n"
                f"template:\n  - id: default\n    storage: {os.path.dirname(zone)}\n"
                f"    zonefile-sync: -1\n    journal-content: changes\n    semantic-checks: off\n"
                f"zone:\n  - domain: {ORIGIN}\n    file: {os.path.basename(zone)}\n    acl: local\n"
                f"    notify: [nc, knot2]\n")
    primary = subprocess.Popen(["knotd", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = [primary]
    try:
        scale.wait_answer(port, f"n{n - 1}.{ORIGIN}")
        with scale.xdp_veth(work, peer_pass=True) as (a, b, ns, pins):
            nc, _ = nearcast_secondary(
                work, port, n, port=nc_port, listen=("10.253.0.1",), name="nc-xdp-secondary",
                # Its table sized for the zone, as an operator sizes it: at the start it serves
                # none, and a table sized for none leaves most names to the slow path.
                extra=f'xdp:\n  interfaces: ["{a}:native"]\n  pin-root: {pins}\n  names-capacity: {n + n // 4}\n')
            procs.append(nc)
            procs.append(notified_knot_secondary(f"{work}/knot2", knot2_port, port))
            last = f"n{n - 1}.{ORIGIN}"
            scale.wait_answer(knot2_port, last, deadline_s=1200)
            # nearcast's zone through XDP: asked from the namespace until answered.
            first = poller("10.253.0.1", nc_port, last, f"10.{((n - 1) >> 16) & 255}.{((n - 1) >> 8) & 255}.{(n - 1) & 255}",
                           ns=ns)
            if first.wait(1300) != 0:
                raise RuntimeError("nearcast's XDP did not serve the zone; its log ends:\n"
                                   + open(f"{work}/nc-xdp-secondary/nc.log").read()[-3000:])
            times = {"nearcast": [], "knot": []}
            before = scale.xdp_counters(pins)
            for k in range(CHANGES):
                name, addr = f"n{(k + 1) * (n // (CHANGES + 1))}.{ORIGIN}", f"203.0.113.{k + 1}"
                polls = {"nearcast": poller("10.253.0.1", nc_port, name, addr, ns=ns),
                         "knot": poller("127.0.0.1", knot2_port, name, addr)}
                time.sleep(0.2)  # the pollers started and asking
                t0 = time.monotonic()
                knotc(conf, "zone-begin", ORIGIN)
                knotc(conf, "zone-unset", ORIGIN, name, "A")
                knotc(conf, "zone-set", ORIGIN, name, "300", "A", addr)
                knotc(conf, "zone-commit", ORIGIN)
                for label, p in polls.items():
                    out, _ = p.communicate(timeout=120)
                    if p.returncode != 0:
                        raise RuntimeError(f"{label} did not serve {name} {addr}; nearcastd's log ends:\n"
                                           + open(f"{work}/nc-xdp-secondary/nc.log").read()[-3000:])
                    times[label].append(float(out) - t0)
            after = scale.xdp_counters(pins)
            stop(nc)
            verdicts = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
            return {"times": times, "xdp_answered": verdicts.get("answered", 0), "xdp": verdicts}
    finally:
        for p in procs:
            if p.poll() is None:
                stop(p)


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
            r["in"] = transfer_in(work, zone, n)
            r["notify"] = notify_to_served(work, zone, n)
            print(n, "notify to served", r["notify"], flush=True)
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
    lines += [
        "",
        "Transfers in: each server as a secondary of one Knot (AXFR), start to serving the zone's last name; "
        f"then {CHANGES} changes made in that Knot with knotc's transaction, each from the commit to the new "
        "address answered, told by NOTIFY (nearcast with its XDP fast path, asked across the veth; Knot as the "
        "other secondary).",
        "",
        "| names | | nearcast | Knot | NSD |",
        "|---:|---|---:|---:|---:|",
    ]
    for n, r in results.items():
        i, t = r["in"], r["notify"]["times"]
        def ms(xs):
            xs = sorted(xs)
            return f"{statistics.median(xs) * 1000:.0f} / {xs[-1] * 1000:.0f}"
        lines += [
            f"| {n:,} | AXFR in: start to serving (s) | "
            + " | ".join(f"{i[x]['seconds']:.2f}" for x in ("nearcast", "knot", "nsd")) + " |",
            "| | peak RSS by then (MiB) | " + " | ".join(f"{i[x]['peak']:.0f}" for x in ("nearcast", "knot", "nsd"))
            + " |",
            f"| | one change, NOTIFY to served, median / max (ms) | {ms(t['nearcast'])} (XDP answered "
            f"{r['notify']['xdp_answered']:,} queries, passed "
            f"{sum(v for k, v in r['notify']['xdp'].items() if k.startswith('pass_') and k != 'pass_not_dns'):,}) "
            f"| {ms(t['knot'])} | |",
        ]
    lines.append("<!-- bench-transfer:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-transfer"], input=table, text=True,
                   check=True)


def poll_main(host, port, name, addr):
    scale.wait_answer(int(port), name, 120, scale.has_address(addr), poll=0.0005, host=host)
    print(time.monotonic(), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--poll"]:
        poll_main(*sys.argv[2:6])
        sys.exit(0)
    if not os.access(NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    main()
