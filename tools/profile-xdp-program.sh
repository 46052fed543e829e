#!/usr/bin/env bash
# Where the XDP program's nanoseconds go: xdpbench runs one packet row through the program with
# BPF_PROG_TEST_RUN over and over (--profile), and `perf record -e cpu-clock` samples it (a software
# clock: this VM has no hardware counters, so `bpftool prog profile` cannot run). Samples are
# counted by function (the program's own code, the kernel's helpers it calls, the test-run harness
# around it), then the program's own samples by source line: Debian's perf and bpftool have no
# libbfd to annotate a JITed program, so tools/jit-lines.c reads where each source line's code
# starts from the kernel (jited_line_info and the program's BTF). A sample counts for the line
# whose code it falls in; inlined code counts for its own line (geo.h's, dns.h's...).
#
#   tools/profile-xdp-program.sh ["A, IPv4"] [--defences]    # RUNS=200000000 SAMPLE_SECONDS=20 TOP=18 LINES=30
set -euo pipefail
cd "$(dirname "$0")/.."
command -v perf >/dev/null || { echo "profile-xdp-program: needs perf: apt-get install linux-perf" >&2; exit 1; }
ROW=${1:-"A, IPv4"}
shift || true
RUNS=${RUNS:-200000000}
SECONDS_SAMPLED=${SAMPLE_SECONDS:-20}
[ -n "${MAKELEVEL:-}" ] || make -s bpf .build/geo/test-city.mmdb >/dev/null
# The flags of `make build`: other flags would rebuild every module, and make build would again.
swift build -c release --static-swift-stdlib --product xdpbench >/dev/null 2>&1
cc -O2 -Wall -o .build/jit-lines tools/jit-lines.c -lbpf
work=$(mktemp -d)
trap 'kill "$bench" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT; echo "work: $work" >&2

taskset -c "${CPU:-1}" .build/release/xdpbench --profile "$ROW" --runs "$RUNS" "$@" >"$work/bench.out" 2>&1 &
bench=$!
for _ in $(seq 200); do grep -q '^profiling:' "$work/bench.out" && break; sleep 0.1; done
grep -q '^profiling:' "$work/bench.out" || { cat "$work/bench.out" >&2; exit 1; }
perf record -q -e cpu-clock -F 49999 -C "${CPU:-1}" -o "$work/perf.data" -- sleep "$SECONDS_SAMPLED" >/dev/null 2>&1 || true
perf script -i "$work/perf.data" -F ip,sym,symoff 2>/dev/null >"$work/samples.txt"
id=$(sed -n 's/^profiling: nearcast_xdp (id \([0-9]*\)).*/\1/p' "$work/bench.out")
.build/jit-lines "$id" >"$work/lines.txt"
python3 - "$work/samples.txt" "$ROW" "$*" "$work/lines.txt" <<'PY'
import bisect, collections, os, re, sys
samples, row, flags, lines = sys.argv[1:5]
by_sym = collections.Counter()
total = 0
for l in open(samples):
    parts = l.split()
    if len(parts) < 2:
        continue
    total += 1
    m = re.match(r"bpf_prog_[0-9a-f]+_(\w+)", parts[1])
    by_sym["program: " + m.group(1) if m else re.sub(r"\+0x[0-9a-f]+$", "", parts[1])] += 1
prog = sum(n for s, n in by_sym.items() if s.startswith("program: "))
print(f"where the time goes: '{row}' {flags}".rstrip())
print(f"{total} samples; {prog} ({100 * prog / max(total, 1):.0f} %) in the JITed program's own code")
print("\n| function | share of samples |\n|---|---:|")
for s, n in by_sym.most_common(int(os.environ.get("TOP", "18"))):
    print(f"| {s} | {100 * n / total:.1f} % |")

# The program's samples by source line: the line whose JITed code starts last at or before each.
starts, where = [], []
for l in open(lines):
    addr, place, src = (l.rstrip("\n").split("\t", 2) + [""])[:3]
    starts.append(int(addr, 16))
    where.append(f"{place} `{src.strip()[:70]}`")
by_line = collections.Counter()
for l in open(samples):
    parts = l.split()
    if len(parts) < 2 or not re.match(r"bpf_prog_[0-9a-f]{16}_", parts[1]):
        continue
    i = bisect.bisect_right(starts, int(parts[0], 16)) - 1
    by_line[where[i] if i >= 0 else "?"] += 1
by_file = collections.Counter()
for w, n in by_line.items():
    by_file[w.split(":")[0]] += n
print("\n| source file (of the program's own samples) | share |\n|---|---:|")
for f, n in by_file.most_common():
    print(f"| {f} | {100 * n / max(prog, 1):.1f} % |")
print(f"\n| source line (of the program's own samples) | share |\n|---|---:|")
for s, n in by_line.most_common(int(os.environ.get("LINES", "30"))):
    cell = s.replace("|", "\\|")
    print(f"| {cell} | {100 * n / max(prog, 1):.1f} % |")
PY
