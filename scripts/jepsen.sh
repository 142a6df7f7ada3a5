#!/usr/bin/env bash
# Runs the Jepsen-style check (e2e TestJepsen): 4 submitters of 250 jobs
# each (two with sbatch, two with the API client) against a 4-node lab in
# network namespaces while the leader is killed three times, a follower is
# partitioned off and the compute node is frozen past SlurmdTimeout; then
# every acknowledged job is checked. Run as root. Prints the whole test
# output, then its summary line (acknowledged, completed, requeued, failed,
# lost, duplicated), the fault timeline and how long the run took.
# Usage: scripts/jepsen.sh [more go test flags]   (HPC_LAB_RACE=1: race-built daemons)
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "run as root: the lab uses network namespaces and containers"; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp /tmp/hpc-jepsen-XXXXXX.log)
start=$(date +%s)
status=0
(cd "$here" && go test -race -count=1 -run '^TestJepsen$' -v "$@" ./e2e/) 2>&1 | tee "$log" || status=$?
echo
echo "--- summary"
grep -o 'jepsen: .*' "$log" || echo "no summary line: the test stopped before its checks"
grep -E '^ +[0-9]+\.[0-9]s +[0-9]+ acked ' "$log" || true
echo "run took $(($(date +%s) - start))s (build included); full output in $log"
exit "$status"
