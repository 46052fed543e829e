#!/usr/bin/env python3
"""make bench-scale (issue 29): zones of real size, nearcast beside Knot DNS and NSD serving the same file.

For each size (SIZES, names): a generated zone (an A at each name, an AAAA at every fourth, MX and TXT
at every tenth), then for each server:
  - start to first answer (a query for the last name of the file, polled every 10 ms);
  - RSS after load (/proc/PID/status VmRSS);
  - for nearcast and Knot: CHANGES (Knot: KNOT_CHANGES) record changes, each one add, one change (the
    RRset replaced in one request: nearcast's PUT, Knot's UPDATE that deletes and adds) and one
    delete, timed from the request to the first answer that shows it (nearcast: the management API,
    over one HTTP/1.1 connection kept open, as an operator's automation keeps it; Knot: a DNS
    UPDATE, RFC 2136, as nsupdate sends it), p50, p99 and (nearcast) the largest. A p99
    needs a few hundred samples: of 100, it is the largest, one host hiccup. Knot's take 36-250 ms
    each at 1M-10M names, so it gets fewer;
  - a reload of the zone file with RELOADED records changed (and the serial), timed from the signal
    (nearcast: SIGHUP; Knot: knotc zone-reload) to the last changed name answered anew;
  - for nearcast: RSS after MANY further changes, once the zone file is written back with the last.
nearcast runs without XDP here. With --xdp, for each size, nearcast alone with its fast path
attached to a veth pair of its own (made and removed by this script): start to the fast path
ready with every answer in it, the answers it holds and leaves out, RSS and the BPF maps' kernel
memory (RSS counts the pages of the maps this process maps, the arena and the slots: its
anonymous part is the process's own), a query mix (MIX queries: names of the zone by their types,
10 % NODATA, 10 % NXDOMAIN) replayed through XDP by kxdpgun from a namespace of its own and the
share XDP answered, a reload with RELOADED records changed (and the records it wrote into the fast path), and
the record changes above; into the bench-scale-xdp section.
Before each size is timed, an untimed start of nearcastd warms the host's memory (`warm_up`).
Everything listens on 127.0.0.1 only. Results go to stdout and into BENCHMARKS.md between the
bench-scale markers.
"""
import contextlib
import re
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import http.client
import urllib.request
from dnswire import skip_name

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [int(s) for s in os.environ.get("SIZES", "10000 100000 1000000").split()]
CHANGES = int(os.environ.get("CHANGES", "500"))
KNOT_CHANGES = int(os.environ.get("KNOT_CHANGES", "100"))
MANY = int(os.environ.get("MANY", "10000"))
RELOADED = int(os.environ.get("RELOADED", "10"))
MIX = int(os.environ.get("MIX", "20000"))
NEARCASTD = os.path.join(ROOT, ".build/release/nearcastd")
ORIGIN = "scale.test."
TOKEN = "w" * 32


def free_port(low=20000, high=60000):
    """A port free for UDP and TCP on 127.0.0.1, from LOW to HIGH. Fresh sockets for each try: a
    socket bound by a try whose other bind failed cannot be bound again, and every later try would
    fail."""
    for _ in range(100):
        port = random.randint(low, high)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u, socket.socket() as t:
            try:
                u.bind(("127.0.0.1", port))
                t.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port")


def write_zone(path, n):
    with open(path, "w") as f:
        f.write(f"$ORIGIN {ORIGIN}\n$TTL 300\n@ SOA ns1 hostmaster 1 3600 600 1209600 60\n@ NS ns1\nns1 A 192.0.2.53\n")
        for i in range(n):
            f.write(f"n{i} A 10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}\n")
            if i % 4 == 0:
                f.write(f"n{i} AAAA 2001:db8::{i & 0xffff:x}\n")
            if i % 10 == 0:
                f.write(f"n{i} MX 10 mail.n{i}\nn{i} TXT \"name {i}\"\n")


def edit_for_reload(path, n):
    """Changes RELOADED names' addresses in the zone file at PATH (and its serial), written whole and
    renamed in as an operator's tool would; returns the last changed name and its new address."""
    changed = {f"n{(k + 1) * (n // (RELOADED + 1))} A": f"203.0.113.{k + 1}" for k in range(RELOADED)}
    with open(path) as f, open(path + ".new", "w") as out:
        for line in f:
            if line.startswith("@ SOA "):
                line = line.replace(" hostmaster 1 ", " hostmaster 2 ")
            else:
                key = line.split(" ", 2)[:2]
                if len(key) == 2 and " ".join(key) in changed:
                    line = f"{key[0]} A {changed[' '.join(key)]}\n"
            out.write(line)
    os.rename(path + ".new", path)
    last = f"n{RELOADED * (n // (RELOADED + 1))}.{ORIGIN}"
    return last, f"203.0.113.{RELOADED}"


def name_wire(name):
    out = b""
    for label in name.rstrip(".").split("."):
        out += bytes([len(label)]) + label.encode()
    return out + b"\0"


def query(port, name, qtype=1, timeout=0.2, host="127.0.0.1"):
    """The answer count and rcode of NAME TYPE asked of HOST:PORT over UDP; None on no reply."""
    qid = random.randint(0, 65535)
    msg = struct.pack("!HHHHHH", qid, 0, 1, 0, 0, 0) + name_wire(name) + struct.pack("!HH", qtype, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        try:
            s.sendto(msg, (host, port))
            reply = s.recv(4096)
        except OSError:
            return None
    _, flags, _, ancount, _, _ = struct.unpack("!HHHHHH", reply[:12])
    return ancount, flags & 0xF, reply


def wait_answer(port, name, deadline_s=600, want=lambda r: r is not None and r[1] == 0 and r[0] > 0, poll=0.01,
                host="127.0.0.1"):
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        r = query(port, name, timeout=poll * 5, host=host)
        if want(r):
            return time.monotonic() - start
        time.sleep(poll)
    raise RuntimeError(f"{name} not answered as expected within {deadline_s} s")


def soa_serial(port):
    """The SOA serial of ORIGIN as 127.0.0.1:PORT answers it."""
    r = query(port, ORIGIN, qtype=6, timeout=1)
    if r is None or r[0] == 0:
        raise RuntimeError("no SOA answer")
    reply = r[2]
    i = skip_name(reply, 12) + 4  # the question
    i = skip_name(reply, i) + 10  # the answer's owner, type, class, TTL, RDLENGTH
    i = skip_name(reply, skip_name(reply, i))  # MNAME, RNAME
    return struct.unpack("!I", reply[i : i + 4])[0]


def settled(log_path, port, deadline_s=120):
    """Waits until the zone file is written back at the serial served (the last change in it),
    and its memory given back: RSS measured then is what the changes leave, not a write-back's
    transient (at 1M names a write-back holds its text and sort keys for a second or two)."""
    line = f"serial={soa_serial(port)} [NearcastControl] zone file written back"
    deadline = time.monotonic() + deadline_s
    while line not in open(log_path).read():
        if time.monotonic() > deadline:
            raise RuntimeError(f"no write-back at the last serial within {deadline_s} s")
        time.sleep(0.1)
    time.sleep(2)


def write_back_deadline(n):
    """Seconds a zone file of N names may take to be written back (at a lower priority than the
    changes): 120, and 60 a million names past that (at 10M, 120 s was too few on a slow hour)."""
    return 120 + 60 * n // 1_000_000


def rss_mib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0


class APIConnection:
    """The management API over one HTTP/1.1 connection kept open, as an automation's client (a
    requests.Session, say) calls it: a new TCP connection per change measured the connection's
    set-up with it (accepted, a pipeline made, on another event loop than the one that listens),
    0.5 ms of a change's p50 and up to 3 ms of its p99 on a host of two cores."""

    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def __call__(self, method, path, body=None):
        headers = {"Authorization": f"Bearer {TOKEN}"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        out = r.read()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {out[:200]!r}")
        return out

    def close(self):
        self.conn.close()


def wait_api(port, deadline_s=600):
    """Polls the management API's /healthz until it answers: it may listen after the DNS does."""
    start = time.monotonic()
    while time.monotonic() - start < deadline_s:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"the management API on port {port} did not answer within {deadline_s} s")


def has_address(addr):
    def check(r):
        return r is not None and r[1] == 0 and r[0] > 0 and socket.inet_aton(addr) in r[2][-4:]

    return check


def no_answer(r):
    return r is not None and r[0] == 0


def percentiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] * 1000, xs[min(len(xs) - 1, int(len(xs) * 0.99))] * 1000


def timed_reload(p, port, zone, n):
    """Seconds from SIGHUP to process `p` to the last of RELOADED changed names answered anew."""
    last, addr = edit_for_reload(zone, n)
    t = time.monotonic()
    p.send_signal(signal.SIGHUP)
    wait_answer(port, last, 600, has_address(addr), poll=0.001)
    return time.monotonic() - t


def timed_changes(port, aport):
    """CHANGES records added, changed and deleted through the API, each timed to answered."""
    path = f"/v1/zones/{ORIGIN}/records"
    times = {"add": [], "change": [], "delete": []}
    call = APIConnection(aport)
    for k in range(CHANGES):
        name, a1, a2 = f"chg{k}.{ORIGIN}", f"192.0.2.{k % 250 + 1}", f"198.51.100.{k % 250 + 1}"
        t = time.monotonic()
        call("POST", path, {"name": name, "type": "A", "data": a1})
        wait_answer(port, name, 10, has_address(a1), poll=0.0005)
        times["add"].append(time.monotonic() - t)
        t = time.monotonic()
        call("PUT", f"{path}?name={name}&type=A", {"data": [a2]})  # as Knot's UPDATE: delete and add at once
        wait_answer(port, name, 10, has_address(a2), poll=0.0005)
        times["change"].append(time.monotonic() - t)
        t = time.monotonic()
        call("DELETE", f"{path}?name={name}&type=A")
        wait_answer(port, name, 10, no_answer, poll=0.0005)
        times["delete"].append(time.monotonic() - t)
    call.close()
    return times


def many_changes(aport):
    """MANY more changes through the API, an add and a delete at a time, untimed."""
    path = f"/v1/zones/{ORIGIN}/records"
    call = APIConnection(aport)
    for k in range(MANY // 2):
        name = f"many{k % 50}.{ORIGIN}"
        call("POST", path, {"name": name, "type": "A", "data": "192.0.2.7"})
        call("DELETE", f"{path}?name={name}&type=A")
    call.close()


def nearcast(work, zone, n):
    port, aport = free_port(), free_port()
    with open(f"{work}/tokens", "w") as f:
        f.write(f"write {TOKEN}\n")
    with open(f"{work}/nc.yaml", "w") as f:
        f.write(
            f'listen: ["127.0.0.1:{port}"]\nzones: [{{ origin: {ORIGIN}, file: {zone} }}]\n'
            f'api: {{ listen: "127.0.0.1:{aport}", tokens: tokens }}\nstate-dir: state\nzonefile-sync: 10\n'
        )
    t0 = time.monotonic()
    log = open(f"{work}/nc.log", "w+")
    p = subprocess.Popen([NEARCASTD, "--config", f"{work}/nc.yaml", "--log-level", "info"], stdout=log, stderr=log)
    try:
        wait_answer(port, f"n{n - 1}.{ORIGIN}")
        load = time.monotonic() - t0
        rss, anon = rss_mib(p.pid), rss_mib(p.pid, "RssAnon")
        wait_api(aport)
        reload_s = timed_reload(p, port, zone, n)
        times = timed_changes(port, aport)
        rss_before_many = rss_mib(p.pid)
        t = time.monotonic()
        many_changes(aport)
        many_s = time.monotonic() - t
        settled(f"{work}/nc.log", port, write_back_deadline(n))
        return {
            "load": load, "rss": rss, "anon": anon, "reload": reload_s, "times": times,
            "rss_before_many": rss_before_many, "rss_after_many": rss_mib(p.pid),
            "anon_after_many": rss_mib(p.pid, "RssAnon"), "many_per_s": MANY / many_s,
        }
    finally:
        p.terminate()
        p.wait(30)


def bpf_map_mib(pid):
    """The kernel memory (memlock) of the BPF maps process `pid` holds, from its fds' fdinfo, each
    map once (the program's object holds fds of the maps' object's maps: ProgramLoad)."""
    memlock = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if "anon_inode:bpf-map" not in os.readlink(f"/proc/{pid}/fd/{fd}"):
                continue
            info = open(f"/proc/{pid}/fdinfo/{fd}").read()
        except OSError:
            continue
        m = re.search(r"^memlock:\s*(\d+)", info, re.M)
        i = re.search(r"^map_id:\s*(\d+)", info, re.M)
        memlock[i.group(1) if i else f"fd{fd}"] = int(m.group(1)) if m else 0
    return sum(memlock.values()) / 2**20


@contextlib.contextmanager
def xdp_veth(work, peer_pass=False):
    """A veth pair for a nearcastd's fast path: yields (A, B, NS, PINS): the server end A holds
    10.253.0.1 on the host, the client end B 10.253.0.2 in namespace NS of its own (so that queries
    to A's address cross the veth, and XDP, instead of the loopback), and PINS a pin root in a bpffs
    of its own (the host's /sys/fs/bpf may be none: a fresh machine mounts none there). All of it
    is removed after. PEER_PASS: B gets an XDP program that passes everything, without which a
    veth drops the frames XDP_TX sends to it (kxdpgun brings its own)."""
    a, b = f"ncsc{os.getpid() % 10000}a", f"ncsc{os.getpid() % 10000}b"
    ns = f"ncsc{os.getpid() % 10000}c"
    bpffs = f"{work}/bpffs"
    os.makedirs(bpffs, exist_ok=True)
    subprocess.run(["mount", "-t", "bpf", "bpf", bpffs], check=True)
    pins = f"{bpffs}/pins"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["ip", "link", "set", b, "netns", ns], check=True)
        subprocess.run(["ip", "addr", "add", "10.253.0.1/24", "dev", a], check=True)
        subprocess.run(["ip", "-n", ns, "addr", "add", "10.253.0.2/24", "dev", b], check=True)
        subprocess.run(["ip", "link", "set", a, "up"], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", b, "up"], check=True)
        if peer_pass:
            subprocess.run(["ip", "-n", ns, "link", "set", "dev", b, "xdpdrv", "obj",
                            os.path.join(ROOT, ".build/bpf/xdp_pass.bpf.o"), "sec", "xdp"], check=True)
        yield a, b, ns, pins
    finally:
        subprocess.run(["ip", "link", "del", a], check=False)
        subprocess.run(["ip", "netns", "del", ns], check=False)
        shutil.rmtree(pins, ignore_errors=True)
        subprocess.run(["umount", bpffs], check=False)


def nearcast_xdp(work, zone, n):
    """nearcast with its fast path on a veth pair of its own: start to the fast path ready, and memory."""
    port, aport = free_port(), free_port()
    with open(f"{work}/tokens", "w") as f:
        f.write(f"write {TOKEN}\n")
    with xdp_veth(work) as (a, b, ns, pins):
        with open(f"{work}/ncx.yaml", "w") as f:
            f.write(
                # The veth's address too: XDP answers only queries to the addresses listened on.
                f'listen: ["127.0.0.1:{port}", "10.253.0.1:{port}"]\nzones: [{{ origin: {ORIGIN}, file: {zone} }}]\n'
                f'state-dir: state-xdp\nxdp:\n  interfaces: ["{a}:native"]\n  pin-root: {pins}\n'
                f'api: {{ listen: "127.0.0.1:{aport}", tokens: tokens }}\nzonefile-sync: 10\n'
            )
        log = open(f"{work}/ncx.log", "w+")
        t0 = time.monotonic()
        p = subprocess.Popen([NEARCASTD, "--config", f"{work}/ncx.yaml", "--log-level", "info"], stdout=log, stderr=log)
        try:
            wait_answer(port, f"n{n - 1}.{ORIGIN}")
            load = time.monotonic() - t0
            deadline = time.monotonic() + 1800
            while True:
                text = open(f"{work}/ncx.log").read()
                line = next((x for x in text.splitlines() if "fast path ready" in x), None)
                if line or p.poll() is not None or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            if not line:
                raise RuntimeError(f"the fast path did not get ready:\n{text[-2000:]}")
            ready = time.monotonic() - t0
            fields = dict(re.findall(r"([a-z-]+)=(\S+)", line))
            time.sleep(2)  # the image's memory given back after the write
            rss, peak, maps = rss_mib(p.pid), rss_mib(p.pid, "VmHWM"), bpf_map_mib(p.pid)
            anon = rss_mib(p.pid, "RssAnon")
            mix = replay_mix(work, n, ns, b, pins, port)
            wait_api(aport)
            # A reload of the file with RELOADED records changed: its differences written into
            # the live generation before the slow path switches, so answered there means both.
            reload_s = timed_reload(p, port, zone, n)
            deadline = time.monotonic() + 60
            while "reloaded" not in open(f"{work}/ncx.log").read() and time.monotonic() < deadline:
                time.sleep(0.01)
            line = next(x for x in open(f"{work}/ncx.log").read().splitlines() if "reloaded" in x)
            reload_written = int(dict(re.findall(r"([a-z-]+)=(\S+)", line))["fast-path-written"])
            # Record changes through the API, which returns once XDP's maps and the slow path hold
            # them: to answered by the slow path (XDP's maps were written before it switched).
            times = timed_changes(port, aport)
            many_changes(aport)
            settled(f"{work}/ncx.log", port, write_back_deadline(n))
            return {
                "load": load, "ready": ready, "rss": rss, "peak": peak, "maps": maps, "times": times,
                "reload": reload_s, "reload_written": reload_written, "mix": mix,
                "rss_after": rss_mib(p.pid), "anon_after": rss_mib(p.pid, "RssAnon"), "maps_after": bpf_map_mib(p.pid),
                "anon": anon,
                "names": int(fields["names"]), "answers": int(fields["answers"]), "full": int(fields["table-full"]),
                "collisions": int(fields["hash-collisions"]), "too_big": int(fields["too-big"]),
                "capacity": int(fields["capacity"]),
            }
        finally:
            p.terminate()
            p.wait(60)


def xdp_counters(pins):
    """XDP's verdict counters (nc_stats, summed over CPUs), by reason, from the pinned map."""
    out = subprocess.run(["bpftool", "-j", "map", "dump", "pinned", f"{pins}/nc_stats"], capture_output=True,
                         text=True, check=True).stdout
    total = {}
    for v in json.loads(out)[0]["formatted"]["values"]:
        for k, x in v["value"].items():
            if isinstance(x, int):  # the verdicts (the answers by type are an array)
                total[k] = total.get(k, 0) + x
    return total


def mix_cell(m):
    """The query mix's row cell: XDP's answers (NXDOMAIN among them) over the DNS queries it counted
    (all but what is not DNS at all: ARP and the like), what it passed, and kxdpgun's replies."""
    c = m["counted"]
    answered = c.get("answered", 0) + c.get("answered_nxdomain", 0) + c.get("answered_geo", 0)
    dns = sum(v for k, v in c.items() if k != "pass_not_dns")
    passed = sum(v for k, v in c.items() if k.startswith("pass_") and k != "pass_not_dns")
    share = 100 * answered / dns if dns else 0
    return (f"{answered:,} ({c.get('answered_nxdomain', 0):,}) / {dns:,} = {share:.2f} %; {passed:,}; "
            f"{m['replies']:,} / {m['sent']:,}")


def replay_mix(work, n, ns, ifname, pins, port):
    """A query mix replayed through XDP by kxdpgun from the client namespace: names of the zone
    by the types they have (80 %), types they lack (NODATA, 10 %), names that do not exist
    (NXDOMAIN, 10 %). Returns how XDP counted them and what kxdpgun saw."""
    rng = random.Random(29)
    lines = []
    for _ in range(MIX):
        i, r = rng.randrange(n), rng.random()
        if r < 0.1:
            lines.append(f"nx{i}.{ORIGIN} A")
        elif r < 0.2:
            lines.append(f"n{i | 1}.{ORIGIN} AAAA")  # odd: no AAAA (every fourth has one)
        else:
            i -= i % 10
            lines.append(f"n{i}.{ORIGIN} {rng.choice(['A', 'AAAA', 'MX', 'TXT'])}")
    with open(f"{work}/mix.txt", "w") as f:
        f.write("\n".join(lines) + "\n")
    before = xdp_counters(pins)
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "kxdpgun", "-t", "4", "-Q", "20000", "-p", str(port), "-i", f"{work}/mix.txt",
         "-I", ifname, "10.253.0.1"], capture_output=True, text=True, timeout=60)
    after = xdp_counters(pins)
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    sent = int(re.search(r"total queries:\s+(\d+)", out.stdout).group(1))
    replies = int(re.search(r"total replies:\s+(\d+)", out.stdout).group(1))
    return {"sent": sent, "replies": replies, "counted": delta}


def main_xdp():
    rows = []
    for n in SIZES:
        work = tempfile.mkdtemp(prefix=f"nearcast-scale-xdp-{n}-")
        try:
            zone = f"{work}/scale.test.zone"
            write_zone(zone, n)
            r = nearcast_xdp(work, zone, n)
            print(n, "nearcast --xdp", json.dumps(r), flush=True)
            rows.append((n, r))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    lines = [
        "<!-- bench-scale-xdp:start (written by tools/bench-scale.py --xdp; do not edit by hand) -->",
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())}, kernel {os.uname().release}, {os.cpu_count()} cores.",
        f"Command: `make bench-scale` (`tools/bench-scale.py --xdp`, SIZES={' '.join(map(str, SIZES))}): nearcast with its",
        f"fast path attached (native, a veth pair of the script's own), the same generated zones as above; CHANGES={CHANGES} of each kind, MANY={MANY}.",
        "",
        "| names | start to first answer (s) | to the fast path ready (s) | records (names) in the fast path | their answers | left out (full / collisions / too big) | capacity | RSS (anonymous), peak (MiB) | BPF maps (MiB) "
        f"| reload, {RELOADED} records changed, to answered (s); records written | record add / change / delete, API to answered, p50, p99 (the largest) (ms) "
        f"| RSS (anonymous), maps after {4 * CHANGES + MANY:,} changes (MiB) "
        "| query mix replayed: answered by XDP, of them NXDOMAIN / queries XDP counted; passed; replies / sent |",
        "|---:|---:|---:|---:|---:|---|---:|---|---:|---|---|---|---|",
    ]
    for n, r in rows:
        lines.append(
            f"| {n:,} | {r['load']:.2f} | {r['ready']:.2f} | {r['names']:,} | {r['answers']:,} | {r['full']} / {r['collisions']} / {r['too_big']} "
            f"| {r['capacity']:,} | {r['rss']:.0f} ({r['anon']:.0f}), {r['peak']:.0f} | {r['maps']:.0f} "
            f"| {r['reload']:.2f}; {r['reload_written']} "
            f"| {' / '.join('%.1f, %.1f (%.1f)' % (*percentiles(r['times'][k]), max(r['times'][k]) * 1000) for k in ('add', 'change', 'delete'))} "
            f"| {r['rss_after']:.0f} ({r['anon_after']:.0f}), {r['maps_after']:.0f} | {mix_cell(r['mix'])} |"
        )
    lines.append("<!-- bench-scale-xdp:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-scale-xdp"], input=table, text=True, check=True)


def update_message(name, add=None, delete=False):
    """A DNS UPDATE (RFC 2136) of zone ORIGIN: delete NAME's A RRset, and/or add NAME A ADD."""
    msg = struct.pack("!HHHHHH", random.randint(0, 65535), 5 << 11, 1, 0, (1 if delete else 0) + (1 if add else 0), 0)
    msg += name_wire(ORIGIN) + struct.pack("!HH", 6, 1)
    if delete:
        msg += name_wire(name) + struct.pack("!HHIH", 1, 255, 0, 0)
    if add:
        msg += name_wire(name) + struct.pack("!HHIH", 1, 1, 300, 4) + socket.inet_aton(add)
    return msg


def send_update(port, msg):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(struct.pack("!H", len(msg)) + msg)
        n = struct.unpack("!H", s.recv(2))[0]
        reply = b""
        while len(reply) < n:
            reply += s.recv(n - len(reply))
    rcode = struct.unpack("!H", reply[2:4])[0] & 0xF
    if rcode != 0:
        raise RuntimeError(f"update refused: rcode {rcode}")


def knot(work, zone, n):
    port = free_port()
    os.makedirs(f"{work}/knot", exist_ok=True)
    with open(f"{work}/knot.conf", "w") as f:
        f.write(
            f"server:\n  listen: 127.0.0.1@{port}\n  rundir: {work}/knot\n"
            f"database:\n  storage: {work}/knot\n"
            f"acl:\n  - id: local\n    address: 127.0.0.1\n    action: update\n"
            f"template:\n  - id: default\n    storage: {os.path.dirname(zone)}\n    zonefile-sync: 10\n"
            f"    journal-content: changes\n    semantic-checks: off\n"
            f"zone:\n  - domain: {ORIGIN}\n    file: {os.path.basename(zone)}\n    acl: local\n"
        )
    t0 = time.monotonic()
    p = subprocess.Popen(["knotd", "-c", f"{work}/knot.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_answer(port, f"n{n - 1}.{ORIGIN}")
        load = time.monotonic() - t0
        rss = rss_mib(p.pid)
        last, addr = edit_for_reload(zone, n)
        t = time.monotonic()
        subprocess.run(["knotc", "-c", f"{work}/knot.conf", "zone-reload", ORIGIN], check=True, capture_output=True)
        wait_answer(port, last, 600, has_address(addr), poll=0.001)
        reload_s = time.monotonic() - t
        times = {"add": [], "change": [], "delete": []}
        for k in range(KNOT_CHANGES):
            name, a1, a2 = f"chg{k}.{ORIGIN}", f"192.0.2.{k % 250 + 1}", f"198.51.100.{k % 250 + 1}"
            t = time.monotonic()
            send_update(port, update_message(name, add=a1))
            wait_answer(port, name, 10, has_address(a1), poll=0.0005)
            times["add"].append(time.monotonic() - t)
            t = time.monotonic()
            send_update(port, update_message(name, add=a2, delete=True))
            wait_answer(port, name, 10, has_address(a2), poll=0.0005)
            times["change"].append(time.monotonic() - t)
            t = time.monotonic()
            send_update(port, update_message(name, delete=True))
            wait_answer(port, name, 10, no_answer, poll=0.0005)
            times["delete"].append(time.monotonic() - t)
        return {"load": load, "rss": rss, "reload": reload_s, "times": times}
    finally:
        p.terminate()
        p.wait(30)


def nsd(work, zone, n):
    port = free_port()
    with open(f"{work}/nsd.conf", "w") as f:
        f.write(
            f'server:\n  ip-address: 127.0.0.1@{port}\n  username: ""\n  chroot: ""\n  zonesdir: "{work}"\n'
            f'  pidfile: "{work}/nsd.pid"\n  database: ""\n  zonelistfile: "{work}/zone.list"\n'
            f'  xfrdfile: "{work}/xfrd.state"\n  xfrdir: "{work}"\n  server-count: 1\n  verbosity: 0\n'
            f"remote-control:\n  control-enable: no\nzone:\n  name: {ORIGIN}\n  zonefile: \"{zone}\"\n"
        )
    t0 = time.monotonic()
    p = subprocess.Popen(["nsd", "-d", "-c", f"{work}/nsd.conf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_answer(port, f"n{n - 1}.{ORIGIN}")
        load = time.monotonic() - t0
        # NSD forks its server and xfrd: the memory of all of them.
        pids = [p.pid] + [int(x) for x in subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()]
        return {"load": load, "rss": sum(rss_mib(x) for x in pids)}
    finally:
        p.terminate()
        p.wait(30)


def warm_up(work, zone, n):
    """An untimed start of nearcastd on the zone before the servers are timed. The first server
    to load a large zone on this host (a virtual machine) pays for memory the host has not given
    the guest yet: at 10M names, in one sequence of starts, Knot 18.5 s first and 13.9-14.1 after,
    nearcast 15.3 s after one start and 13.9-15.1 after more. Whoever went first (nearcast, here)
    lost 4 s to that; after this start, none does."""
    port = free_port()
    with open(f"{work}/warm.yaml", "w") as f:
        f.write(f'listen: ["127.0.0.1:{port}"]\nzones: [{{ origin: {ORIGIN}, file: {zone} }}]\n')
    t0 = time.monotonic()
    p = subprocess.Popen([NEARCASTD, "--config", f"{work}/warm.yaml"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_answer(port, f"n{n - 1}.{ORIGIN}")
        print(n, "warm-up start", f"{time.monotonic() - t0:.2f} s", flush=True)
    finally:
        p.terminate()
        p.wait(60)


def main():
    if not os.access(NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    rows = []
    for n in SIZES:
        work = tempfile.mkdtemp(prefix=f"nearcast-scale-{n}-")
        try:
            zone = f"{work}/scale.test.zone"
            write_zone(zone, n)
            res = {}
            warm_up(work, zone, n)
            for server, fn in (("nearcast", nearcast), ("knot", knot), ("nsd", nsd)):
                shutil.copy(zone, f"{zone}.orig")
                res[server] = fn(work, zone, n)
                shutil.copy(f"{zone}.orig", zone)
                for leftover in (f"{zone}.journal",):
                    if os.path.exists(leftover):
                        os.remove(leftover)
                print(n, server, json.dumps({k: v for k, v in res[server].items() if k != "times"}), flush=True)
            rows.append((n, res))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def ms(server_res, kind, largest=True):
        p50, p99 = percentiles(server_res["times"][kind])
        return f"{p50:.1f} / {p99:.1f}" + (f" ({max(server_res['times'][kind]) * 1000:.1f})" if largest else "")

    cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].split(":", 1)[1].strip()
    knotv = subprocess.run(["knotd", "-V"], capture_output=True, text=True).stdout.strip()
    lines = [
        "<!-- bench-scale:start (written by tools/bench-scale.py; do not edit by hand) -->",
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} on {cpu}, kernel {os.uname().release}, {os.cpu_count()} cores; {knotv}.",
        f"Command: `make bench-scale` (SIZES={' '.join(map(str, SIZES))}, CHANGES={CHANGES}, KNOT_CHANGES={KNOT_CHANGES}, MANY={MANY}, RELOADED={RELOADED}). nearcast without XDP. Record changes: p50 / p99 (the largest).",
        "",
        "| names | | nearcast | Knot | NSD |",
        "|---:|---|---:|---:|---:|",
    ]
    for n, r in rows:
        c, k, d = r["nearcast"], r["knot"], r["nsd"]
        lines += [
            f"| {n:,} | start to first answer (s) | {c['load']:.2f} | {k['load']:.2f} | {d['load']:.2f} |",
            f"| | RSS after load (MiB; the daemon's own, anonymous, in brackets) | {c['rss']:.0f} ({c['anon']:.0f}) | {k['rss']:.0f} | {d['rss']:.0f} |",
            f"| | reload, {RELOADED} records changed, to answered (s) | {c['reload']:.2f} | {k['reload']:.2f} | - |",
        ]
        for kind in ("add", "change", "delete"):
            lines.append(
                f"| | record {kind}, to answered: p50 / p99 (ms) | {ms(c, kind)} | {ms(k, kind, largest=False)} | - |"
            )
        grown, anon = c["rss_after_many"] - c["rss"], c["anon_after_many"] - c["anon"]
        lines.append(
            f"| | RSS after the reload and {CHANGES * 4 + MANY:,} more changes (MiB; {c['many_per_s']:.0f} changes/s) | {c['rss_after_many']:.0f} ({grown:+.0f}, {grown / c['rss'] * 100:+.1f} % of after load; anonymous {anon:+.1f}) | | |"
        )
    lines.append("<!-- bench-scale:end -->")
    table = "\n".join(lines)
    print(table)
    subprocess.run([os.path.join(ROOT, "tools/benchmarks-section.py"), "bench-scale"], input=table, text=True, check=True)


if __name__ == "__main__":
    if not os.access(NEARCASTD, os.X_OK):
        sys.exit("build first: make build")
    main_xdp() if sys.argv[1:] == ["--xdp"] else main()
