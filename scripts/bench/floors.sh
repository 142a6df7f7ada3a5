#!/usr/bin/env bash
# What this machine costs hpc before hpc does anything: the least a figure of
# the side-by-side bench can be here, whatever hpc's own code does. A target
# below its floor cannot be met on this machine by this design (one Go binary
# with cgo for SQLite, Raft's log in bbolt with fsync on, steps in
# libcontainer containers).
#
#   scripts/bench/floors.sh [HPC_BINARY]     (default bin/hpc, built if missing;
#                                            the step figures need root)
#
# Prints, one `figure<TAB>value<TAB>unit` line each:
#   start: /bin/true                 median of BENCH_N_START=200 starts from bash, ms
#   start: Go, no cgo                a Go program that prints one line, built
#                                    with CGO_ENABLED=0, ms
#   start: Go with cgo               the same with one cgo call linked in (the
#                                    dynamic loader, libc, the cgo runtime), ms
#   start: hpc (sbatch --version)    hpc's own, which sends nothing, ms
#   log append, 2 KB, fsync          one Raft log entry into raft-boltdb on
#                                    BENCH_DIR's file system (default /tmp),
#                                    median of 500 (cluster's BenchmarkLogAppend), ms;
#                                    a commit waits for two: the leader's, then a follower's
#   step of /bin/true: container|plain   exec's BenchmarkLaunchTrue, median
#                                    wall time of 100 and CPU per step (the
#                                    executor's, the container's init and
#                                    supervisor's, the task's), ms
#   host CPU steal                   of the machine's busy CPU time during the
#                                    run, the share a virtual machine's host
#                                    took for something else, %
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
source "$root/scripts/bench/lib.sh"
hpc=${1:-$root/bin/hpc}
N=${BENCH_N_START:-200}
dir=${BENCH_DIR:-/tmp}
tags=$(cat "$root/scripts/go-tags")
if [[ ! -x $hpc ]]; then
  (cd "$root" && go build -tags "$tags" -o "$hpc" .)
fi
work=$(mktemp -d /tmp/hpc-floors-XXXXXX)
trap 'rm -rf "$work"' EXIT
emit() { printf '%s\t%s\t%s\n' "$1" "$2" "$3"; }
s0=$(cpu_ticks)

# The two Go programs: the same line printed, one with a cgo call linked in.
mkdir -p "$work/hello"
cat >"$work/hello/go.mod" <<'EOF'
module hello
go 1.22
EOF
cat >"$work/hello/main.go" <<'EOF'
package main

import "os"

func main() { os.Stdout.WriteString("hello\n") }
EOF
(cd "$work/hello" && CGO_ENABLED=0 go build -o "$work/hello-nocgo" .)
cat >"$work/hello/cgo.go" <<'EOF'
package main

// static int one(void) { return 1; }
import "C"

var _ = C.one()
EOF
(cd "$work/hello" && CGO_ENABLED=1 go build -o "$work/hello-cgo" .)
ln -s "$hpc" "$work/sbatch"
"$work/sbatch" --version >/dev/null # the page cache holds it, as it would a command run often

emit "start: /bin/true" "$(timed "$N" /bin/true)" ms
emit "start: Go, no cgo" "$(timed "$N" "$work/hello-nocgo")" ms
emit "start: Go with cgo" "$(timed "$N" "$work/hello-cgo")" ms
emit "start: hpc (sbatch --version)" "$(timed "$N" "$work/sbatch" --version)" ms

# bench_metric OUTPUT BENCHMARK UNIT: a metric of one benchmark's line.
bench_metric() {
  awk -v b="$2" -v u="$3" '$1 ~ "^"b"(-[0-9]+)?$" { for (i = 3; i < NF; i++) if ($(i + 1) == u) print $i }' <<<"$1"
}
out=$(cd "$root" && HPC_BENCH_DIR=$dir go test -tags "$tags" -run '^$' -bench 'BenchmarkLogAppend$' -benchtime 500x ./cluster/)
emit "log append, 2 KB, fsync ($dir)" "$(bench_metric "$out" BenchmarkLogAppend median-ms)" ms

if [[ $(id -u) == 0 ]]; then
  out=$(cd "$root" && go test -tags "$tags" -run '^$' -bench 'BenchmarkLaunchTrue/(container|plain)$' -benchtime 100x ./exec/)
  for m in container plain; do
    emit "step of /bin/true, $m: wall" "$(bench_metric "$out" "BenchmarkLaunchTrue/$m" median-ms)" ms
    emit "step of /bin/true, $m: CPU" "$(bench_metric "$out" "BenchmarkLaunchTrue/$m" cpu-ms/op)" ms
  done
else
  echo "floors.sh: not root: no step figures (containers need root)" >&2
fi
emit "host CPU steal" "$(steal_share "$s0" "$(cpu_ticks)")" %
