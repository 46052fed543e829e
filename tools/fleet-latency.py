#!/usr/bin/env python3
"""make bench-fleet's timings, from the host, against servers in their namespaces
(tools/bench-fleet.sh). Prints one JSON object.

  fleet-latency.py changes SERVERS TOKEN COUNT
      COUNT record additions, each through the API of the next server in turn; for each, the time
      from the API's acknowledgement to the moment every server answers the new name (polled
      over UDP, 1 ms apart).
  fleet-latency.py failures SERVERS COUNT PREFIX PORT
      COUNT failures of node fra1 (192.0.2.10): its check's target (a TCP listener on 127.0.0.1:PORT
      in each namespace PREFIX-i) is stopped everywhere at once; the time until every server's
      answer for geo.example.test A leaves fra1 out; then the targets start again and the time until
      every server answers with it again.
  fleet-latency.py registrations SERVERS TOKEN COUNT SECONDS
      COUNT nodes registering over SECONDS through the servers in turn (64 senders at once); for
      each, the time from its acknowledgement to every server answering ID.nodes.example.test A.
  fleet-latency.py churn SERVERS TOKEN COUNT SECONDS
      The same, then the COUNT nodes leaving over SECONDS; for each, the time from its
      acknowledgement to every server answering without it.
"""
import json
import random
import socket
import struct
import subprocess
import sys
import time
import urllib.request
from dnswire import skip_name


def query(name, qtype=1):
    qid = random.randrange(65536)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return qid, q + b"\0" + struct.pack(">HH", qtype, 1)


def addresses(server, name, sock):
    """The A records `server` answers for `name` (None: no reply within 0.2 s)."""
    qid, q = query(name)
    sock.sendto(q, (server, 53))
    deadline = time.monotonic() + 0.2
    while True:
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        try:
            m, _ = sock.recvfrom(4096)
        except socket.timeout:
            return None
        if len(m) >= 12 and struct.unpack(">H", m[:2])[0] == qid:
            break
    an = struct.unpack(">H", m[6:8])[0]
    i = skip_name(m, 12) + 4
    out = []
    for _ in range(an):
        i = skip_name(m, i)
        t, _, _, ln = struct.unpack(">HHIH", m[i : i + 10])
        i += 10
        if t == 1 and ln == 4:
            out.append(socket.inet_ntoa(m[i : i + 4]))
        i += ln
    return out


def until(servers, name, holds, sock, limit=30.0):
    """Seconds from now until `holds(answer)` for every server's answer (each server polled
    until it does, 1 ms apart); None past `limit`."""
    start = time.monotonic()
    pending = list(servers)
    while pending:
        if time.monotonic() - start > limit:
            return None
        pending = [s for s in pending if not holds(addresses(s, name, sock))]
        if pending:
            time.sleep(0.001)
    return time.monotonic() - start


def percentiles(xs):
    xs = sorted(x * 1000 for x in xs)
    at = lambda q: xs[min(len(xs) - 1, int(len(xs) * q))]
    return {"n": len(xs), "p50_ms": round(at(0.5), 1), "p99_ms": round(at(0.99), 1), "max_ms": round(xs[-1], 1)}


def changes(servers, token, count):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    took, refused = [], 0
    for k in range(count):
        api = servers[k % len(servers)]
        name = f"fleet{k}-{random.randrange(1 << 30)}"
        body = json.dumps({"name": name, "type": "A", "data": f"192.0.2.{k % 250 + 1}"}).encode()
        try:
            api_call(api, token, "POST", "/v1/zones/example.test./records", body)
        except Exception:
            refused += 1
            continue
        t = until(servers, f"{name}.example.test.", lambda a: a is not None and len(a) == 1, sock)
        if t is None:
            print(f"change {k} never reached every server", file=sys.stderr)
            sys.exit(1)
        took.append(t)
    return {"acknowledged_to_served_everywhere": percentiles(took), "refused": refused}


def failures(servers, count, prefix, port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    script = (
        "import socket\ns=socket.socket()\ns.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n"
        f"s.bind(('127.0.0.1',{port}))\ns.listen(64)\nprint('up',flush=True)\n"
        "while True:\n    c,_=s.accept()\n    c.close()\n")

    def start():
        ps = [subprocess.Popen(["ip", "netns", "exec", f"{prefix}-{i}", "python3", "-c", script],
                               stdout=subprocess.PIPE, text=True) for i in range(len(servers))]
        for p in ps:
            p.stdout.readline()
        return ps

    up = lambda a: a is not None and "192.0.2.10" in a
    down = lambda a: a is not None and len(a) > 0 and "192.0.2.10" not in a
    targets = start()
    if until(servers, "geo.example.test.", up, sock, 60) is None:
        sys.exit("fra1 never came up everywhere")
    fail, back = [], []
    for _ in range(count):
        for p in targets:
            p.kill()
        for p in targets:
            p.wait()
        t = until(servers, "geo.example.test.", down, sock)
        if t is None:
            sys.exit("fra1 never went down everywhere")
        fail.append(t)
        targets = start()
        t = until(servers, "geo.example.test.", up, sock)
        if t is None:
            sys.exit("fra1 never came back everywhere")
        back.append(t)
        time.sleep(0.3)
    for p in targets:
        p.kill()
    return {"failure_to_last_server": percentiles(fail), "recovery_to_last_server": percentiles(back)}


def api_call(api, token, method, path, body=None):
    req = urllib.request.Request(
        f"http://{api}:8053{path}", data=body, method=method,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    urllib.request.urlopen(req, timeout=30).read()


def timed_calls(servers, count, seconds, call, served, senders=64):
    """COUNT API calls (`call(k, api)`, through the servers in turn) over SECONDS, from SENDERS
    threads at once (agents are independent: each waits for its own answer, which comes once the
    server it asked serves it, so few senders would pace the load by the servers' latency rather
    than offer COUNT / SECONDS a second); each is timed from its acknowledgement until every
    server's answer satisfies `served(k, answer)` (k's name: `call`'s return value; each server
    asked again only until it does)."""
    import threading
    took, refused, never, lock = [], [0], [0], threading.Lock()
    pending = {}  # k -> (name, acknowledgement time, servers not yet serving it)
    done = threading.Event()

    def send(first):
        for k in range(first, count, senders):
            due = start + seconds * k / count
            if time.monotonic() < due:
                time.sleep(due - time.monotonic())
            try:
                name = call(k, servers[k % len(servers)])
            except Exception as e:
                with lock:
                    refused[0] += 1
                why = e.read().decode(errors="replace").strip() if hasattr(e, "read") else ""
                print(f"call {k}: {e} {why}", file=sys.stderr)
                continue
            with lock:
                pending[k] = (name, time.monotonic(), list(servers))

    def check():
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        while not done.is_set() or pending:
            with lock:
                items = list(pending.items())
            for k, (name, acked, left) in items:
                left = [s for s in left if not served(k, addresses(s, name, sock))]
                with lock:
                    if not left:
                        del pending[k]
                        took.append(time.monotonic() - acked)
                    elif time.monotonic() - acked > 120:
                        # (A thread's sys.exit would end only the checker, leaving the rest unmeasured.)
                        print(f"{name} not served by {len(left)} server(s) within 120 s", file=sys.stderr)
                        del pending[k]
                        never[0] += 1
                    else:
                        pending[k] = (name, acked, left)
            time.sleep(0.001)

    start = time.monotonic()
    threads = [threading.Thread(target=send, args=(i,)) for i in range(senders)]
    checker = threading.Thread(target=check)
    checker.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sent = time.monotonic() - start
    done.set()
    checker.join()
    return {"to_served_everywhere": percentiles(took) if took else {"n": 0, "p50_ms": 0, "p99_ms": 0, "max_ms": 0},
            "refused": refused[0], "not_served_within_120_s": never[0], "seconds_to_send": round(sent, 1)}


def node_address(k):
    return f"198.18.{k >> 8 & 255}.{k & 255}"


def register(token):
    def call(k, api):
        body = json.dumps({"id": f"reg{k}", "ipv4": node_address(k), "latitude": 50.0, "longitude": 8.0,
                           "country": "DE", "pools": ["web"]}).encode()
        api_call(api, token, "POST", "/v1/nodes", body)
        return f"reg{k}.nodes.example.test."
    return call


def registrations(servers, token, count, seconds):
    """COUNT nodes register (POST /v1/nodes, the agent's API); each is timed to every server
    answering its discovery name (regK.nodes.example.test. A) with its address."""
    return timed_calls(servers, count, seconds, register(token),
                       lambda k, a: node_address(k) in (a or []))


def churn(servers, token, count, seconds):
    """COUNT nodes register as `registrations` does, then leave (DELETE /v1/nodes/ID) over as
    long again; each departure is timed to every server answering its name without it."""
    joined = registrations(servers, token, count, seconds)

    def leave(k, api):
        api_call(api, token, "DELETE", f"/v1/nodes/reg{k}")
        return f"reg{k}.nodes.example.test."
    left = timed_calls(servers, count, seconds, leave, lambda k, a: a is not None and node_address(k) not in a)
    return {"registered": joined, "left": left}


if __name__ == "__main__":
    mode, servers = sys.argv[1], sys.argv[2].split(",")
    if mode == "changes":
        out = changes(servers, sys.argv[3], int(sys.argv[4]))
    elif mode == "registrations":
        out = registrations(servers, sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    elif mode == "churn":
        out = churn(servers, sys.argv[3], int(sys.argv[4]), float(sys.argv[5]))
    else:
        out = failures(servers, int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    print(json.dumps(out))
