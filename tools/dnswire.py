"""DNS wire helpers the Python tools share (bench-scale.py, fleet-latency.py, health-latency.py)."""


def skip_name(msg, i):
    """The offset just past the (possibly compressed) name at offset I of MSG."""
    while True:
        n = msg[i]
        if n == 0:
            return i + 1
        if n & 0xC0 == 0xC0:
            return i + 2
        i += n + 1
