#!/usr/bin/env python3
"""make bench-dnssec (issue 34): the time and memory to sign a zone of real size, nearcast beside Knot
DNS and ldns signing the same file.

For each size (SIZES, names; the zone of `make bench-scale`: an A at each name, an AAAA at every fourth,
MX and TXT at every tenth), with one combined ECDSA P-256 key (algorithm 13) and NSEC:
  - nearcast: `nearcast dnssec sign` (on every core), wall time and peak RSS (/usr/bin/time);
  - ldns: `ldns-signzone` (one thread), the same;
  - Knot: knotd started on the unsigned file with automatic signing, then `knotc -b zone-sign` (a whole
    re-sign, on its background workers), timed; knotd's peak RSS (VmHWM) after it.
Each signed zone's RRSIG count is reported, so that the three are seen to sign the same RRsets.
Then nearcastd itself on the same zone file, without keys and with a key in its state directory (it
signs the zone whole at its start, then each change where it reaches): start to the last name answered,
RSS then, and CHANGES record changes through the API (an add, a change, a delete each, as make
bench-scale times them) from the request to the first answer that shows it, p50 and p99.
Results go to stdout and into BENCHMARKS.md between the bench-dnssec markers.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [int(s) for s in os.environ.get("SIZES", "100000 1000000").split()]
NEARCAST = os.path.join(ROOT, ".build/release/nearcast")
NEARCASTD = os.path.join(ROOT, ".build/release/nearcastd")
CHANGES = int(os.environ.get("CHANGES", "200"))
ORIGIN = "scale.test."
sys.path.insert(0, os.path.join(ROOT, "tools"))


def load_scale():
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_scale", os.path.join(ROOT, "tools/bench-scale.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(cmd, cwd=None):
    """Runs CMD under /usr/bin/time: (seconds, peak RSS in MiB, stdout)."""
    out = subprocess.run(["/usr/bin/time", "-f", "@@ %e %M"] + cmd, cwd=cwd, capture_output=True, text=True,
                         timeout=3600)
    if out.returncode != 0:
        sys.exit(f"{cmd[0]} failed: {out.stderr[-2000:]}")
    seconds, kib = re.findall(r"@@ ([\d.]+) (\d+)", out.stderr)[-1]
    return float(seconds), int(kib) / 1024, out.stdout


def rrsigs(path):
    with open(path) as f:
        return sum(1 for line in f if "\tRRSIG\t" in line or " RRSIG " in line)


def knot(dir, zone_file, n):
    """Knot signing the zone: knotd started with automatic signing, then a whole re-sign timed."""
    port = 20000 + os.getpid() % 20000
    conf = os.path.join(dir, "knot.conf")
    os.makedirs(os.path.join(dir, "kdb"), exist_ok=True)
    with open(conf, "w") as f:
        f.write(f"""server:
    listen: 127.0.0.1@{port}
    rundir: "{dir}"
database:
    storage: "{dir}/kdb"
policy:
  - id: bench
    algorithm: ecdsap256sha256
    single-type-signing: on
    nsec3: off
acl:
  - id: local
    address: 127.0.0.1
    action: transfer
template:
  - id: default
    storage: "{dir}"
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: {ORIGIN}
    file: "{os.path.basename(zone_file)}"
    dnssec-signing: on
    dnssec-policy: bench
    acl: [local]
log:
  - target: stderr
    any: error
""")
    proc = subprocess.Popen(["knotd", "-c", conf], stdout=subprocess.DEVNULL, stderr=open(os.path.join(dir, "knot.log"), "w"))
    try:
        deadline = time.time() + 3600
        while time.time() < deadline:  # signed at its load: its SOA has a signature
            out = subprocess.run(["kdig", "@127.0.0.1", "-p", str(port), "+dnssec", "+retry=0", "+timeout=1",
                                  ORIGIN, "SOA"], capture_output=True, text=True)
            if out.returncode == 0 and ("\tRRSIG\t" in out.stdout or " RRSIG " in out.stdout):
                break
            time.sleep(0.2)
        start = time.time()
        sign = subprocess.run(["knotc", "-c", conf, "-s", os.path.join(dir, "knot.sock"), "-b", "-t", "3600", "zone-sign", ORIGIN], capture_output=True,
                              text=True, timeout=3600)
        if sign.returncode != 0:
            sys.exit(f"knotc zone-sign failed: {sign.stdout}{sign.stderr}")
        seconds = time.time() - start
        with open(f"/proc/{proc.pid}/status") as f:
            peak = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024
        axfr = subprocess.run(["kdig", "@127.0.0.1", "-p", str(port), ORIGIN, "AXFR"], capture_output=True,
                              text=True, timeout=600).stdout
        return seconds, peak, axfr.count("\tRRSIG\t") + axfr.count(" RRSIG ")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run(n, scale):
    dir = tempfile.mkdtemp(prefix="nearcast-bench-dnssec-")
    try:
        zone = os.path.join(dir, "scale.zone")
        scale.write_zone(zone, n)
        state = os.path.join(dir, "state")
        subprocess.run([NEARCAST, "dnssec", "keygen", ORIGIN, "--state-dir", state], check=True, capture_output=True)
        ours = timed([NEARCAST, "dnssec", "sign", ORIGIN, zone, "--state-dir", state, "-o", zone + ".nearcast"])
        key = subprocess.run(["ldns-keygen", "-k", "-a", "ECDSAP256SHA256", ORIGIN], cwd=dir, check=True,
                             capture_output=True, text=True).stdout.strip()
        ldns = timed(["ldns-signzone", "-f", zone + ".ldns", zone, key], cwd=dir)
        k = knot(dir, zone, n)
        return {"n": n, "nearcast": (ours[0], ours[1], rrsigs(zone + ".nearcast")),
                "ldns": (ldns[0], ldns[1], rrsigs(zone + ".ldns")), "knot": k}
    finally:
        shutil.rmtree(dir, ignore_errors=True)


def daemon(n, scale, signed):
    """nearcastd serving the zone of N names, with a key (SIGNED) or without: start to the last name
    answered, RSS then, and the API's changes timed to answered (p50, p99 in ms, all kinds together)."""
    work = tempfile.mkdtemp(prefix="nearcast-bench-dnssec-daemon-")
    try:
        zone = os.path.join(work, "scale.zone")
        scale.write_zone(zone, n)
        state = os.path.join(work, "state")
        if signed:
            subprocess.run([NEARCAST, "dnssec", "keygen", ORIGIN, "--state-dir", state], check=True,
                           capture_output=True)
        port, aport = scale.free_port(), scale.free_port()
        with open(os.path.join(work, "tokens"), "w") as f:
            f.write(f"write {scale.TOKEN}\n")
        with open(os.path.join(work, "nc.yaml"), "w") as f:
            f.write(f'listen: ["127.0.0.1:{port}"]\nzones: [{{ origin: {ORIGIN}, file: {zone} }}]\n'
                    f'api: {{ listen: "127.0.0.1:{aport}", tokens: {work}/tokens }}\nstate-dir: {state}\n')
        log = open(os.path.join(work, "nc.log"), "w+")
        t0 = time.monotonic()
        p = subprocess.Popen([NEARCASTD, "--config", os.path.join(work, "nc.yaml"), "--log-level", "info"],
                             stdout=log, stderr=log)
        try:
            scale.wait_answer(port, f"n{n - 1}.{ORIGIN}", 3600)
            load = time.monotonic() - t0
            rss = scale.rss_mib(p.pid)
            scale.wait_api(aport)
            scale.CHANGES = CHANGES
            times = scale.timed_changes(port, aport)
            log.seek(0)
            if signed and "zone signed" not in log.read():
                sys.exit("nearcastd did not sign the zone")
            return load, rss, scale.percentiles(sum(times.values(), []))
        finally:
            p.terminate()
            p.wait(60)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    scale = load_scale()
    results = [run(n, scale) for n in SIZES]
    daemons = [(n, daemon(n, scale, False), daemon(n, scale, True)) for n in SIZES]
    lines = [
        "<!-- bench-dnssec:start (written by tools/bench-dnssec.py; do not edit by hand) -->",
        "A whole zone signed (NSEC, one ECDSA P-256 combined key), the zone of `make bench-scale`: "
        f"nearcast (`nearcast dnssec sign`, {os.cpu_count()} threads), ldns-signzone (one thread), and Knot "
        "(`knotc -b zone-sign` on a knotd that signed the zone at its load; its background workers). Wall time, "
        "peak RSS, and the RRSIGs each made.",
        "",
        "| names | | nearcast | ldns-signzone | Knot |",
        "|---:|---|---:|---:|---:|",
    ]
    for r in results:
        c, l, k = r["nearcast"], r["ldns"], r["knot"]
        lines += [
            f"| {r['n']:,} | sign (s) | {c[0]:.1f} | {l[0]:.1f} | {k[0]:.1f} |",
            f"| | peak RSS (MiB) | {c[1]:.0f} | {l[1]:.0f} | {k[1]:.0f} |",
            f"| | RRSIGs | {c[2]:,} | {l[2]:,} | {k[2]:,} |",
        ]
    lines += [
        "",
        f"nearcastd serving the same zone, unsigned and signed by itself (a key in its state directory; "
        f"signed whole at its start): start to the last name answered, RSS then, and {CHANGES} each of record "
        "adds, changes and deletes through the API timed to the first answer that shows them (the signed "
        "zone's re-signed where they reach: the name, the apex, the NSEC predecessor).",
        "",
        "| names | | unsigned | signed |",
        "|---:|---|---:|---:|",
    ]
    for n, u, g in daemons:
        lines += [
            f"| {n:,} | start to answered (s) | {u[0]:.1f} | {g[0]:.1f} |",
            f"| | RSS (MiB) | {u[1]:.0f} | {g[1]:.0f} |",
            f"| | a change, p50 / p99 (ms) | {u[2][0]:.1f} / {u[2][1]:.1f} | {g[2][0]:.1f} / {g[2][1]:.1f} |",
        ]
    lines.append("<!-- bench-dnssec:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-dnssec"], input=table, text=True,
                   check=True)


if __name__ == "__main__":
    if not os.access(NEARCAST, os.X_OK):
        sys.exit("build first: make build")
    main()
