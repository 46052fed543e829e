#!/usr/bin/env bash
# Runs the Swift test binary in steps. First the many short suites, alone (in two parts); then, as two
# processes at once, the suites that compute for seconds at a time (BPF programs run on packets,
# large zones built and compared) and the serialized suites that drive daemons in network
# namespaces for minutes, one test after another.
#
# Why: a test's time limit counts from when the run starts it, and a synchronous test holds a
# thread of the cooperative pool, which is as wide as the machine has cores. On a two-core machine
# the short suites, run beside the computing ones, waited for a thread past their time limits;
# alone they take under a minute.
# Usage: tools/run-tests.sh TEST-BINARY [ARGS...]  (ARGS go to every process)
set -uo pipefail
bin=$1
shift
compute='^(BPFKitTests|NearcastDataPathTests|XDPFuzz)\.|\.(ZoneChangeTests|ChangedZoneDifferentialTests|LargeZoneWriteBackTests)/'
serial='\.(XDPEndToEndTests|FleetHealthTests|DebianPackageTests|DaemonSigningTests)/'
run() { "$bin" --testing-library swift-testing --verbose "$@"; }

rc=0
# The short suites as two processes, one after the other: those that start daemons and wait on
# them, then those that run in the test process. As one process, on two cores, the daemons' tests
# held both threads of the pool while they waited, and tests of a millisecond with a time limit of
# a minute waited 56 s for a thread (a slower machine, past their limit). Alone, the daemons' tests
# take about 45 s; their suites have time limits of two minutes and more. DaemonSigningTests (half
# a minute of daemons signing, a validator beside them) runs with the serialized suites: in this
# part it made the others' wait for a thread 66 s.
daemons='^NearcastServerTests\.'
run --filter "$daemons" --skip "$compute" --skip "$serial" "$@"
status=$?
echo "=== run-tests: the short suites that start daemons exited $status"
[ "$status" -eq 0 ] || rc=1
run --skip "$daemons" --skip "$compute" --skip "$serial" "$@"
status=$?
echo "=== run-tests: the short suites in the test process exited $status"
[ "$status" -eq 0 ] || rc=1

run --filter "$compute" "$@" &
computing=$!
run --filter "$serial" "$@" &
serialized=$!
for part in computing:$computing serialized:$serialized; do
	wait "${part#*:}"
	status=$?
	echo "=== run-tests: the ${part%:*} suites exited $status"
	[ "$status" -eq 0 ] || rc=1
done
exit $rc
