#!/usr/bin/env bash
# Runs a test command with a time limit. If the limit passes, prints the tests that had started
# and not finished (from Swift Testing's "Test X started." / "passed" / "failed" lines, which
# `swift test --verbose` prints), the
# programs the tests had started and were still running (their command lines and the end of their
# output, from NEARCAST_TEST_LOG_DIR, where the tests' launcher keeps them), then kills the whole
# run and exits 124. A run that fails ends with the issues its tests recorded, repeated.
# Usage: tools/test-watchdog.sh SECONDS COMMAND [ARGS...]
set -uo pipefail

limit=$1
shift
own_dir=0
if [ -z "${NEARCAST_TEST_LOG_DIR:-}" ]; then
	NEARCAST_TEST_LOG_DIR=$(mktemp -d /tmp/nearcast-test-logs.XXXXXX)
	own_dir=1
fi
export NEARCAST_TEST_LOG_DIR
mkdir -p "$NEARCAST_TEST_LOG_DIR"
transcript=$(mktemp /tmp/nearcast-test-transcript.XXXXXX)

# The command in a process group of its own, so that the whole run can be killed at once.
# stdbuf: line-buffered output, so a killed run has printed every test it started.
setsid stdbuf -oL -eL "$@" > >(tee "$transcript") 2>&1 &
pid=$!

report() {
	echo
	echo "=== test-watchdog: the run passed its limit of ${limit} s and was stopped"
	echo "=== tests started and not finished:"
	# "◇ Test name() started." ... "✔ Test name() passed after 1.2 seconds." / "✘ ... failed ...".
	sed -n 's/^.*Test \(.*\) started\.$/\1/p' "$transcript" | grep -vx run | sort | uniq -c | sort -k2 >/tmp/nc-wd-started.$$
	sed -n 's/^.*Test \(.*\) \(passed\|failed\) after .*$/\1/p; s/^.*Test \(.*\) skipped.*$/\1/p' "$transcript" | sort | uniq -c | sort -k2 >/tmp/nc-wd-ended.$$
	join -1 2 -2 2 -a 1 -e 0 -o 1.2,1.1,2.1 /tmp/nc-wd-started.$$ /tmp/nc-wd-ended.$$ | awk '$2 > $3 { print "    " $1 }'
	rm -f /tmp/nc-wd-started.$$ /tmp/nc-wd-ended.$$
	echo "=== programs the tests started that were still running:"
	for cmd in "$NEARCAST_TEST_LOG_DIR"/*.cmd; do
		[ -e "$cmd" ] || continue
		echo "--- $(head -1 "$cmd")"
		sed -n 's/^test: /    started by /p' "$cmd"
		out=$(sed -n 's/^output: //p' "$cmd")
		[ -n "$out" ] && [ -e "$out" ] && tail -n 40 "$out" | sed 's/^/    /'
		err=${out%.log}.err
		[ -e "$err" ] && tail -n 40 "$err" | sed 's/^/    /'
	done
}

deadline=$((SECONDS + limit))
while kill -0 "$pid" 2>/dev/null; do
	if [ "$SECONDS" -ge "$deadline" ]; then
		# The run first, so that it starts nothing more; then the programs it started, each in a
		# group of its own, named by its .cmd file.
		kill -KILL -- "-$pid" 2>/dev/null
		report
		for c in $(ls "$NEARCAST_TEST_LOG_DIR" | sed -n 's/^\([0-9]*\)\.cmd$/\1/p'); do
			kill -TERM -- "-$c" 2>/dev/null
			sleep 1
			kill -KILL -- "-$c" 2>/dev/null
		done
		wait "$pid" 2>/dev/null
		rm -f "$transcript"
		exit 124
	fi
	sleep 2
done
wait "$pid"
status=$?
# A failed run ends with what failed: CI shows the end of the output, and the issues were printed
# among hundreds of passing lines. Each issue with up to 20 lines of its details (the "↳" lines and
# their indented continuation).
if [ "$status" -ne 0 ]; then
	sleep 1 # tee's last lines into the transcript (tee is not a job of ours to wait for)
	echo
	echo "=== test-watchdog: the run failed (exit $status); the issues the tests recorded:"
	awk '/^✘ / { print; n = 0; inside = 1; next }
		inside && (/^↳/ || /^  /) { if (++n <= 20) print; else if (n == 21) print "    ..."; next }
		{ inside = 0 }' "$transcript" | head -n 300
fi
rm -f "$transcript"
# What the children left is kept when the run failed, for a look; else it goes.
if [ "$status" -eq 0 ] && [ "$own_dir" -eq 1 ]; then rm -rf "$NEARCAST_TEST_LOG_DIR"; fi
exit $status
