#!/usr/bin/env bash
# The house's counts (issue 68): how concurrency is spelled in Sources, how large the largest types
# and docs/ARCHITECTURE.md are, and what the tests repeat. Each line is one count and the grep that
# made it, so that a closing note can give them before and after a change from the same commands.
# Usage: tools/house-counts.sh   (from anywhere in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."

count() { # LABEL DIR EXTENDED-REGEX: the matches (not lines) of REGEX in DIR's Swift files
	local n
	n=$( (grep -rhoE --include='*.swift' "$3" $2 || true) | wc -l)
	printf "%-34s %5d   grep -rhoE --include='*.swift' '%s' %s\n" "$1" "$n" "$3" "$2"
}

echo "== concurrency in Sources"
count "actors" Sources '^[[:space:]]*((public|package|private|fileprivate|internal|final|distributed) )*actor [A-Z]'
count "Mutex (declared)" Sources 'Mutex<'
count "Atomic (declared)" Sources 'Atomic<'
count "DispatchSemaphore" Sources 'DispatchSemaphore\('
count "places a thread is made" Sources '(^|[^A-Za-z])Thread( \{|\(block)|detachNewThread|pthread_create'
count "WorkerThread made" Sources 'WorkerThread\(name'
count "onOwnThread calls" Sources 'onOwnThread\(name'
count "Task { } and Task.detached" Sources '(^|[^A-Za-z.])Task (\{|\[weak|\(priority)|Task\.detached'
count "@unchecked Sendable" Sources '@unchecked Sendable'
count "thread helpers (types)" Sources '(class|struct|enum|actor) (OwnThread|WorkerThread|ThreadExecutor|Handoff|ParallelWork)\b'

echo "== sizes"
printf '%-34s %5d   wc -l docs/ARCHITECTURE.md\n' "ARCHITECTURE.md lines" "$(wc -l <docs/ARCHITECTURE.md)"
printf '%-34s %5d   wc -w docs/ARCHITECTURE.md\n' "ARCHITECTURE.md words" "$(wc -w <docs/ARCHITECTURE.md)"
if [ -e ../shared/tools/type-sizes.py ]; then
	echo "largest types (lines across their extensions; ../shared/tools/type-sizes.py Sources 8):"
	python3 ../shared/tools/type-sizes.py Sources 8 | awk '{ printf "    %5d %s %s (%s files)\n", $1, $2, $3, $4 }'
fi

echo "== tests"
count "sleeps outside the support" "Tests/*Tests" '(usleep\(|Thread\.sleep\(|Task\.sleep\(for: \.milliseconds)'
count "ask helpers outside the support" "Tests/*Tests" 'func ask[A-Za-z]*\('
count "config writers outside it" "Tests/*Tests" 'func ([a-z]+)?[cC]onfig\('
count "questions built outside the support" "Tests/*Tests" 'DNSQuestion\(name'
