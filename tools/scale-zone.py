#!/usr/bin/env python3
"""tools/scale-zone.py N FILE: the generated zone of `make bench-scale` (scale.test., N names: an A at
each, an AAAA at every fourth, MX and TXT at every tenth), written to FILE; e.g. for
`make fuzz-xdp ZONE=FILE ORIGIN=scale.test.`, the differential at a zone's real size."""
import importlib.util
import os
import sys

spec = importlib.util.spec_from_file_location("bench_scale", os.path.join(os.path.dirname(__file__), "bench-scale.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
if len(sys.argv) != 3:
    sys.exit(__doc__)
bench.write_zone(sys.argv[2], int(sys.argv[1]))
