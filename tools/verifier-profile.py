#!/usr/bin/env python3
"""Where the verifier's steps go: `make verifier-profile`.

Loads the BPF object through the kernel's verifier with its whole log (tools/verifier-stats.sh
OBJECT LOG), counts how often it walked each instruction, and maps the instructions to the source
lines that clang's line table gives them (llvm-objdump -l). Prints the steps by source file, then
the lines walked most. For each line, "paths" is the fewest times any of its instructions was
walked: how many verifier states reached it. A loop of N steps reached by P paths shows up as
N x P on the lines of its body; fewer paths into it (states that prune at its head) or fewer steps
are what make the count fall.

Usage: tools/verifier-profile.py OBJECT.bpf.o [TOP]
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def walked(obj):
    """Instruction index -> times the verifier walked it, from its level-2 log; and where each
    global function starts in the loaded program (libbpf appends them after the entry in the
    order it meets their calls, not in .text's)."""
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "verifier.log")
        subprocess.run([os.path.join(HERE, "verifier-stats.sh"), obj, log], check=True, timeout=600)
        counts, starts = collections.Counter(), {}
        insn = re.compile(rb"^(\d+): \([0-9a-f]{2}\)")
        validating = re.compile(rb"^Validating (\w+)\(\) func#\d+")
        pending = None
        with open(log, "rb") as f:
            for line in f:
                m = insn.match(line)
                if m:
                    counts[int(m.group(1))] += 1
                    if pending:
                        starts[pending] = int(m.group(1))
                        pending = None
                    continue
                m = validating.match(line)
                if m:
                    pending = m.group(1).decode()
        return counts, starts


def source_lines(obj, starts):
    """Instruction index in the loaded program -> "file:line": the entry's section as it is, each
    function of .text from where `starts` says the verifier found it."""
    out = subprocess.run(
        ["llvm-objdump", "-d", "-l", "--no-show-raw-insn", obj],
        check=True, capture_output=True, text=True, timeout=120).stdout
    sections, functions = {}, {}
    section, line = None, None
    for text in out.splitlines():
        m = re.match(r"^Disassembly of section (\S+):", text)
        if m:
            section = m.group(1)
            sections[section] = {}
            continue
        m = re.match(r"^([0-9a-f]{16}) <(\w+)>:$", text)
        if m and not m.group(2).startswith("LBB"):
            functions[m.group(2)] = (section, int(m.group(1), 16) // 8)
            continue
        m = re.match(r"^; (/\S+:\d+)$", text)
        if m:
            line = os.path.relpath(m.group(1), os.path.join(HERE, "..", "bpf"))
            continue
        m = re.match(r"^\s+(\d+):\s", text)
        if m and section:
            sections[section][int(m.group(1))] = line
    entry = [s for s in sections if s != ".text"]
    if len(entry) != 1:
        sys.exit(f"verifier-profile: expected one program section beside .text, found {entry}")
    lines = dict(sections[entry[0]])
    text = sections.get(".text", {})
    ends = sorted(at for s, at in functions.values() if s == ".text") + [max(text, default=-1) + 1]
    for name, start in starts.items():
        section, at = functions.get(name, (None, None))
        if section != ".text":
            continue
        end = next(e for e in ends if e > at)
        for i in range(at, end):
            if i in text:
                lines[start + i - at] = text[i]
    return lines


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    obj, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 30
    counts, starts = walked(obj)
    lines = source_lines(obj, starts)
    by_file, by_line = collections.Counter(), collections.defaultdict(list)
    for i, where in lines.items():
        by_line[where].append(counts.get(i, 0))
        by_file[(where or "?").split(":")[0]] += counts.get(i, 0)
    total = sum(counts.values())
    print(f"{total:,} instruction steps in the log")
    print("\nsteps  share  file")
    for f, n in by_file.most_common():
        print(f"{n:>7,}  {100 * n / max(total, 1):4.1f}%  {f}")
    print(f"\nsteps  paths  line (the {top} walked most)")
    ranked = sorted(by_line.items(), key=lambda kv: -sum(kv[1]))[:top]
    for where, visits in ranked:
        print(f"{sum(visits):>7,}  {min(visits):>5}  {where}")


if __name__ == "__main__":
    main()
