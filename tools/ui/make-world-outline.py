#!/usr/bin/env python3
"""Writes the dashboard's world outline (Sources/NearcastServer/UI/world.path): Natural Earth's
1:110m countries (public domain), as one SVG path in a 360 x 180 box (x = longitude + 180,
y = 90 - latitude), points at least a degree apart, at a tenth of a degree. The data comes from the
`naturalearth_lowres` copy that geopandas 0.14 ships (PyPI), read here without geopandas: a
shapefile's polygons are a few fixed-layout records.

    tools/ui/make-world-outline.py [naturalearth_lowres.shp]   # default: pip download geopandas==0.14.4
"""
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "Sources", "NearcastServer", "UI", "world.path")
MIN_STEP = 1.0  # degrees between kept points (3 px on a 1000 px map): ~55 KB for the world


def shapefile_path():
    if len(sys.argv) > 1:
        return sys.argv[1]
    work = tempfile.mkdtemp()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", work, "geopandas==0.14.4"], check=True)
    wheel = next(f for f in os.listdir(work) if f.endswith(".whl"))
    member = "geopandas/datasets/naturalearth_lowres/naturalearth_lowres.shp"
    with zipfile.ZipFile(os.path.join(work, wheel)) as z:
        z.extract(member, work)
    return os.path.join(work, member)


def rings(data):
    """Every ring of every polygon record (shape type 5) of a .shp file."""
    at = 100  # after the file header
    while at < len(data):
        _, length = struct.unpack(">ii", data[at:at + 8])
        body = data[at + 8:at + 8 + 2 * length]
        at += 8 + 2 * length
        (shape,) = struct.unpack("<i", body[:4])
        if shape != 5:
            continue
        parts, points = struct.unpack("<ii", body[36:44])
        starts = list(struct.unpack("<%di" % parts, body[44:44 + 4 * parts])) + [points]
        xy = body[44 + 4 * parts:]
        for p in range(parts):
            yield [struct.unpack("<dd", xy[16 * i:16 * i + 16]) for i in range(starts[p], starts[p + 1])]


def main():
    with open(shapefile_path(), "rb") as f:
        data = f.read()
    out = []
    for ring in rings(data):
        kept = []
        for lon, lat in ring:
            x, y = round(lon + 180, 1), round(90 - lat, 1)
            if kept and abs(x - kept[-1][0]) < MIN_STEP and abs(y - kept[-1][1]) < MIN_STEP:
                continue
            kept.append((x, y))
        if len(kept) < 3:
            continue
        out.append("M" + "L".join("%g %g" % p for p in kept) + "Z")
    with open(OUT, "w") as f:
        f.write("".join(out) + "\n")
    print("%s: %d rings, %d bytes" % (os.path.normpath(OUT), len(out), os.path.getsize(OUT)))


main()
