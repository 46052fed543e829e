#!/usr/bin/env python3
"""Replaces one generated section of BENCHMARKS.md, between <!-- NAME:start ... --> and
<!-- NAME:end -->, with the text on standard input (which carries the markers itself); appends it
when the section is missing. Used by the bench scripts: tools/benchmarks-section.py NAME < block"""
import pathlib
import re
import sys

name = sys.argv[1]
block = sys.stdin.read().strip()
path = pathlib.Path(__file__).resolve().parent.parent / "BENCHMARKS.md"
text = path.read_text() if path.exists() else "# nearcast benchmarks\n"
pattern = re.compile(r"<!-- " + re.escape(name) + r":start.*?<!-- " + re.escape(name) + r":end -->", re.S)
if pattern.search(text):
    text = pattern.sub(lambda m: block, text)
else:
    text = text.rstrip() + "\n\n" + block + "\n"
path.write_text(text)
