#!/usr/bin/env bash
# Measures the submit path of a 3-node lab on this machine and prints:
#   - sequential submits per second (hpc submit --wrap true, one after another)
#   - submit-to-COMPLETED latency of `submit --wait --wrap true` (median, p90)
#   - time to drain N trivial jobs over the lab's 6 CPUs
# Usage: scripts/bench-submit.sh [N]   (default 200). Run as root for containers.
set -euo pipefail
N=${1:-200}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/hpc-bench-XXXXXX)
chmod 755 "$work"
trap 'HPC_DIR=$work/lab "$work/hpc" down --dir "$work/lab" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
(cd "$here" && go build -tags "$(cat scripts/go-tags)" -o "$work/hpc" .)
hpc="$work/hpc"
"$hpc" up --dir "$work/lab" --nodes 3 >/dev/null 2>&1 || { echo "a lab may already use 127.0.1.x: stop it first (hpc down)"; exit 1; }
export HPC_DIR=$work/lab
cd "$work"
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }

t0=$(now)
for ((i = 0; i < N; i++)); do "$hpc" submit --parsable --wrap true >/dev/null; done
t1=$(now)
echo "sequential submits: $N in $(calc "$t1 - $t0") s = $(calc "$N / ($t1 - $t0)" 1) submits/s"
last=$("$hpc" submit --parsable --wrap true)
while "$hpc" queue -h | grep -q .; do sleep 0.05; done
t2=$(now)
echo "drain: $((N + 1)) trivial jobs finished $(calc "$t2 - $t0") s after the first submit ($(calc "($N + 1) / ($t2 - $t0)" 1) jobs/s)"

lat=()
for ((i = 0; i < 20; i++)); do
  a=$(now); "$hpc" submit --wait --wrap true >/dev/null; b=$(now)
  lat+=("$(calc "($b - $a) * 1000" 1)")
done
sorted=$(printf '%s\n' "${lat[@]}" | sort -n)
echo "submit --wait of true (20 runs): median $(echo "$sorted" | sed -n 10p) ms, p90 $(echo "$sorted" | sed -n 18p) ms"
echo "steps ran as: $("$hpc" status | sed -n 's/^Steps: *//p')"
