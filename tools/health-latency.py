#!/usr/bin/env python3
"""Times node health changes from outside, as a client sees them (tools/bench-health.sh).

Flips NODE down and up again through the management API (force-down, undrain) over one kept-alive
HTTP connection, and after each request asks the DNS server NAME A over UDP as fast as replies come
until the answer shows the change (NODE's ADDRESS gone, or back). Each change is timed from just
before its API request to the first reply that shows it. Runs until --flips changes are timed, or,
with --until FILE, until FILE exists (and at least --flips). Prints one JSON object: the changes'
times in milliseconds ("ms"), of which until the API's reply ("api_ms"), when each began in seconds
into the run ("at"), when the run began as Unix time ("began"), and how many DNS replies were read.

Run it from the client's side of the fast path (the client namespace), so that its queries are
answered by XDP.
"""
import argparse
import http.client
import json
import os
import random
import socket
import struct
import sys
import time
from dnswire import skip_name


def query(name: str) -> tuple[int, bytes]:
    qid = random.getrandbits(16)
    q = struct.pack("!HHHHHH", qid, 0, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return qid, q + b"\x00" + struct.pack("!HH", 1, 1)


def addresses(msg: bytes) -> set[str]:
    """The IPv4 addresses of a reply's answer section."""
    ancount = struct.unpack("!H", msg[6:8])[0]
    i = skip_name(msg, 12) + 4
    out = set()
    for _ in range(ancount):
        i = skip_name(msg, i)
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[i : i + 10])
        i += 10
        if rtype == 1 and rdlen == 4:
            out.add(socket.inet_ntoa(msg[i : i + 4]))
        i += rdlen
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True, help="HOST:PORT of the management API")
    ap.add_argument("--token", required=True, help="a token of role write or above")
    ap.add_argument("--dns", required=True, help="the DNS server's address (port 53)")
    ap.add_argument("--name", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--address", required=True, help="the node's IPv4 address in answers")
    ap.add_argument("--flips", type=int, default=200, help="changes to time (at least)")
    ap.add_argument("--until", help="go on until this file exists")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds a change may take before the run fails")
    a = ap.parse_args()

    host, port = a.api.rsplit(":", 1)
    api = http.client.HTTPConnection(host, int(port), timeout=a.timeout)
    headers = {"Authorization": f"Bearer {a.token}", "Content-Length": "0"}
    dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dns.connect((a.dns, 53))
    dns.settimeout(0.2)

    def ask() -> set[str] | None:
        qid, q = query(a.name)
        dns.send(q)
        while True:
            try:
                r = dns.recv(4096)
            except socket.timeout:
                return None
            if len(r) >= 12 and struct.unpack("!H", r[:2])[0] == qid:
                return addresses(r)

    times: list[float] = []
    api_times: list[float] = []  # of those, until the API's reply
    starts: list[float] = []  # when each began, seconds into the run
    begin = time.perf_counter()
    began = time.time()  # the same moment, as wall-clock time (to line the run up with logs)
    replies = 0
    n = 0
    while n < a.flips or (a.until and not os.path.exists(a.until)):
        down = n % 2 == 0
        path = f"/v1/nodes/{a.node}/{'force-down' if down else 'undrain'}"
        t0 = time.perf_counter()
        api.request("POST", path, headers=headers)
        r = api.getresponse()
        r.read()
        answered = time.perf_counter()
        if r.status != 200:
            print(f"{path}: {r.status}", file=sys.stderr)
            return 1
        while True:
            got = ask()
            if got is not None:
                replies += 1
                if (a.address in got) != down:
                    break
            if time.perf_counter() - t0 > a.timeout:
                print(f"{path}: not seen within {a.timeout} s", file=sys.stderr)
                return 1
        times.append((time.perf_counter() - t0) * 1000)
        api_times.append((answered - t0) * 1000)
        starts.append(t0 - begin)
        n += 1
    # Leave the node up, as it was.
    if n % 2 == 1:
        api.request("POST", f"/v1/nodes/{a.node}/undrain", headers=headers)
        api.getresponse().read()
    json.dump({"ms": times, "api_ms": api_times, "at": starts, "began": began, "replies": replies}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
