#!/usr/bin/env python3
"""make bench-fleet-keys (issue 34): a fleet's DNSSEC keys kept in its store, at a zone's real size,
beside Knot rolling a key of the same zone in the same run.

For each size (SIZES, names; the zone bench-scale generates), the zone is imported into one etcd, a
combined key made into the store (`nearcast dnssec keygen --config`, sealed under the fleet's secret),
and SERVERS nearcastd started on the store with the secret. Then:
  - start to every server answering the zone's last name with the store's key in its DNSKEY RRset
    (each opens the key, keeps it in its state directory, and signs the zone whole), and each
    server's peak RSS by then;
  - a ZSK made into the store: from `nearcast dnssec keygen --zsk` returning to every server's DNSKEY
    RRset holding it (the watch, the key written into each state directory, a reload of the keys,
    the apex signed again);
  - a rollover begun in the store (`nearcast dnssec roll`): from its return to every server
    publishing the new ZSK, and how many servers scheduled it (one: the holder of `P signer`);
  - Knot (knotd signing the same file itself, KSK and ZSK, after the fleet stopped, so the two do
    not share the cores): from `knotc zone-key-rollover ZONE zsk` to its DNSKEY RRset holding the
    new ZSK.
Everything listens on 127.0.0.1. Results go to stdout and into BENCHMARKS.md between the
bench-fleet-keys markers.
"""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("bench_fleet_secondary",
                                               os.path.join(ROOT, "tools/bench-fleet-secondary.py"))
fleet = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fleet)
scale, transfer = fleet.scale, fleet.transfer

SIZES = [int(s) for s in os.environ.get("SIZES", "100000 1000000").split()]
SERVERS = int(os.environ.get("SERVERS", "3"))
ORIGIN = scale.ORIGIN
NEARCAST = fleet.NEARCAST
DNSKEY = 48


def cli(*args):
    out = subprocess.run([NEARCAST, *args], capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(f"nearcast {' '.join(args)}: {out.stderr}")
    return out.stdout


def dnskeys(port):
    r = scale.query(port, ORIGIN, DNSKEY, timeout=0.5)
    return r[0] if r is not None and r[1] == 0 else -1


def wait_keys(ports, count, deadline_s=600):
    """Seconds until every port's DNSKEY RRset holds COUNT keys."""
    t0 = time.monotonic()
    left = set(ports)
    while left and time.monotonic() - t0 < deadline_s:
        left = {p for p in left if dnskeys(p) != count}
        if left:
            time.sleep(0.01)
    if left:
        raise RuntimeError(f"ports {sorted(left)} do not publish {count} keys within {deadline_s} s")
    return time.monotonic() - t0


def server(work, i, port, etcd_port, secret):
    d = f"{work}/nc{i}"
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/nc.yaml", "w") as f:
        f.write(f'listen: ["127.0.0.1:{port}"]\nstate-dir: {d}/state\npropagation-delay: 3600\n'
                f'store:\n  etcd: {{ endpoints: ["http://127.0.0.1:{etcd_port}"] }}\n  server: s{i}\n'
                f'  key-secret: {secret}\n')
    log = open(f"{d}/nc.log", "w")
    return subprocess.Popen([scale.NEARCASTD, "--config", f"{d}/nc.yaml", "--log-level", "info"], stdout=log,
                            stderr=log)


def knot_rollover(work, zone):
    """knotd signing ZONE (KSK and ZSK), then one ZSK rollover begun: seconds to the new key published."""
    d = f"{work}/knot"
    os.makedirs(f"{d}/kdb", exist_ok=True)
    port = scale.free_port()
    conf = f"{d}/knot.conf"
    with open(conf, "w") as f:
        f.write(f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\ndatabase:\n  storage: {d}/kdb\n"
                f"policy:\n  - id: bench\n    algorithm: ecdsap256sha256\n    single-type-signing: off\n"
                f"    nsec3: off\n    propagation-delay: 3600\n"
                f"template:\n  - id: default\n    storage: {os.path.dirname(zone)}\n    zonefile-sync: -1\n"
                f"    journal-content: none\n"
                f"zone:\n  - domain: {ORIGIN}\n    file: {os.path.basename(zone)}\n    dnssec-signing: on\n"
                f"    dnssec-policy: bench\n"
                f"log:\n  - target: stderr\n    any: error\n")
    p = subprocess.Popen(["knotd", "-c", conf], stdout=subprocess.DEVNULL, stderr=open(f"{d}/knot.log", "w"))
    try:
        wait_keys([port], 2, deadline_s=3600)
        scale.wait_answer(port, f"n0.{ORIGIN}", deadline_s=3600)
        t0 = time.monotonic()
        out = subprocess.run(["knotc", "-c", conf, "-s", f"{d}/knot.sock", "zone-key-rollover", ORIGIN, "zsk"],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            raise RuntimeError(f"knotc zone-key-rollover: {out.stdout}{out.stderr}")
        wait_keys([port], 3, deadline_s=3600)
        return time.monotonic() - t0, scale.rss_mib(p.pid, "VmHWM")
    finally:
        transfer.stop(p)


def run(work, zone, n):
    procs = []
    try:
        store, etcd_port = fleet.etcd(work)
        procs.append(store)
        secret = f"{work}/fleet.secret"
        cli("store", "secret", secret)
        keys_config = f"{work}/keys.yaml"
        with open(keys_config, "w") as f:
            f.write(f'store:\n  etcd: {{ endpoints: ["http://127.0.0.1:{etcd_port}"] }}\n  key-secret: {secret}\n')
        with open(f"{work}/seed.yaml", "w") as f:
            f.write(f"zones: [{{ origin: {ORIGIN}, file: {zone} }}]\n"
                    f'store: {{ etcd: {{ endpoints: ["http://127.0.0.1:{etcd_port}"] }} }}\n')
        subprocess.run([NEARCAST, "store", "import", f"{work}/seed.yaml"], check=True, capture_output=True,
                       timeout=1800)
        cli("dnssec", "keygen", ORIGIN, "--config", keys_config)
        ports = [scale.free_port() for _ in range(SERVERS)]
        t0 = time.monotonic()
        servers = [server(work, i, ports[i], etcd_port, secret) for i in range(SERVERS)]
        procs += servers
        wait_keys(ports, 1, deadline_s=3600)
        for port in ports:
            scale.wait_answer(port, f"n{n - 1}.{ORIGIN}", deadline_s=3600)
        started = time.monotonic() - t0
        peaks = [scale.rss_mib(p.pid, "VmHWM") for p in servers]
        print(n, "fleet signed and serving", started, "peaks", peaks, flush=True)
        time.sleep(5)  # the start's signing settled
        t0 = time.monotonic()
        cli("dnssec", "keygen", ORIGIN, "--zsk", "--config", keys_config)
        wait_keys(ports, 2)
        added = time.monotonic() - t0
        print(n, "a ZSK from the store at every server", added, flush=True)
        t0 = time.monotonic()
        cli("dnssec", "roll", ORIGIN, "--config", keys_config)
        wait_keys(ports, 3)
        rolled = time.monotonic() - t0
        drivers = sum("key rollover scheduled" in open(f"{work}/nc{i}/nc.log").read() for i in range(SERVERS))
        print(n, "rollover's new key at every server", rolled, "scheduled by", drivers, flush=True)
        for p in servers:
            transfer.stop(p)
        knot_seconds, knot_peak = knot_rollover(work, zone)
        print(n, "knot's rollover's new key", knot_seconds, flush=True)
        return {"started": started, "peaks": peaks, "added": added, "rolled": rolled, "drivers": drivers,
                "knot": knot_seconds, "knot_peak": knot_peak}
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                transfer.stop(p)


def main():
    results = {}
    for n in SIZES:
        work = tempfile.mkdtemp(prefix=f"nc-fleet-keys-{n}-")
        try:
            zone = f"{work}/zone"
            scale.write_zone(zone, n)
            results[n] = run(work, zone, n)
            print(n, results[n], flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    lines = [
        "<!-- bench-fleet-keys:start (written by tools/bench-fleet-keys.py; do not edit by hand) -->",
        f"A fleet's DNSSEC keys kept in its store, sealed (`store: key-secret`): {SERVERS} nearcastd sharing one etcd "
        "serve a zone the store holds, signed with the store's keys, beside Knot rolling a ZSK of the same zone "
        "(after the fleet stopped); all on one host of two cores.",
        "",
        "| names | | the fleet | Knot |",
        "|---:|---|---:|---:|",
    ]
    for n, r in results.items():
        lines += [
            f"| {n:,} | start to every server serving the zone signed with the store's key (s) "
            f"| {r['started']:.1f} | |",
            f"| | peak RSS by then (MiB): each server / Knot | {', '.join(f'{p:.0f}' for p in r['peaks'])} "
            f"| {r['knot_peak']:.0f} |",
            f"| | a ZSK made into the store, to every server publishing it (ms) | {r['added'] * 1000:.0f} | |",
            f"| | a ZSK rollover begun, to the new key published: every server / Knot (ms) "
            f"| {r['rolled'] * 1000:.0f} | {r['knot'] * 1000:.0f} |",
            f"| | servers that scheduled the rollover | {r['drivers']} of {SERVERS} | |",
        ]
    lines.append("<!-- bench-fleet-keys:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-fleet-keys"], input=table,
                   text=True, check=True)


if __name__ == "__main__":
    if not os.access(scale.NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    main()
