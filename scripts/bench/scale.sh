#!/usr/bin/env bash
# Scale beyond the side-by-side bench: an hpc lab of the bench's shape (4
# nodes x 2 CPUs, node1-3 controllers) with many pending jobs.
#
#   scripts/bench/scale.sh [JOBS]      (default 100000; as root)
#
# Prints, one `figure<TAB>value<TAB>unit` line each:
#   api submit (C concurrent)  JOBS held jobs through the leader's socket by
#                              BENCH_SUBMITTERS=256 goroutines (apisubmit), jobs/s
#   leader settled             seconds until the leader was quiet after the
#                              submits (its snapshot of the new state), s
#   squeue / sinfo / scontrol show job ID   with JOBS pending, median of 5, ms
#   sbatch --hold              one more submit with JOBS pending, median of 10, ms
#   controller RSS             the leader's, with JOBS pending, MiB
#   leader CPU                 the leader's CPU time per second over 10 s
#                              with JOBS pending and nothing else to do, ms/s
#                              (BENCH_PROFILE=FILE: its CPU profile then;
#                              BENCH_HEAP=FILE: its heap profile before)
#   host CPU steal             of the machine's busy CPU time from the submits
#                              to the end, the share a virtual machine's host
#                              took for something else, %
# The lab listens on 127.0.107.1-4, ports 34817-34819 (reserved in
# e2e/helpers_test.go's labAddrs).
set -euo pipefail
JOBS=${1:-100000}
C=${BENCH_SUBMITTERS:-256}
NET=127.0.107
PORT=34817
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/hpc-scale-XXXXXX)
chmod 755 "$work"
lab=$work/lab
hpc=$work/hpc
cleanup() { HPC_DIR=$lab "$hpc" down --dir "$lab" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
log() { echo "scale: $*" >&2; }

(cd "$root" && go build -tags "$(cat scripts/go-tags)" -o "$hpc" . && go build -o "$work/apisubmit" ./scripts/bench/apisubmit)
mkdir -p "$work/bin"
for c in sbatch squeue sinfo scontrol scancel; do ln -s "$hpc" "$work/bin/$c"; done
cat >"$work/slurm.conf" <<CONF
ClusterName=lab
SlurmctldHost=node1($NET.1)
SlurmctldHost=node2($NET.2)
SlurmctldHost=node3($NET.3)
HpcApiPort=$PORT
HpcRaftPort=$((PORT + 1))
HpcGossipPort=$((PORT + 2))
DefMemPerCPU=1000
MinJobAge=60
MaxJobCount=$((JOBS + 10000))
EnforcePartLimits=ALL
NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000
NodeName=node[1-4] NodeAddr=$NET.[1-4]
PartitionName=debug Nodes=node[1-4] Default=YES MaxTime=1-00:00:00 State=UP
CONF
"$hpc" up --dir "$lab" --nodes 4 --config "$work/slurm.conf" >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
export HPC_DIR=$lab PATH=$work/bin:$PATH
leader() { "$hpc" status | awk '/^Leader:/ { print $2 }'; }
. "$root/scripts/bench/lib.sh" # ms, median, timed, cpu_ticks, steal_share
L=$(leader)
log "leader $L; submitting $JOBS held jobs by $C submitters"
cd "$work"
steal0=$(cpu_ticks)
"$work/apisubmit" -socket "$lab/$L/hpc.sock" -n "$JOBS" -c "$C"
L=$(leader)
pid=$(cat "$lab/$L/hpc.pid")
tick=$(getconf CLK_TCK)
cpu() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
# The submits leave each controller a Raft snapshot of the new state to
# write (seconds of CPU with 100,000 jobs): the figures below are taken
# once the leader has been quiet (under 150 ms of CPU) for a second.
settled=0
while ((settled < 300)); do
  c0=$(cpu)
  sleep 1
  settled=$((settled + 1))
  (((($(cpu) - c0) * 1000 / tick) < 150)) && break
done
printf 'leader settled after the submits\t%d\ts\n' "$settled"
id=$(squeue -h -o %i | awk 'NR == 1')
printf 'squeue (%d pending)\t%s\tms\n' "$JOBS" "$(timed 5 squeue)"
printf 'sinfo (%d pending)\t%s\tms\n' "$JOBS" "$(timed 5 sinfo)"
printf 'scontrol show job ID (%d pending)\t%s\tms\n' "$JOBS" "$(timed 5 scontrol show job "$id")"
printf 'sbatch --hold (%d pending)\t%s\tms\n' "$JOBS" "$(timed 10 sbatch --hold --wrap true)"
printf 'controller RSS (%d pending)\t%s\tMiB\n' "$JOBS" "$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")"
if [[ -n ${BENCH_HEAP:-} ]]; then
  # The leader's heap profile (go tool pprof -sample_index=inuse_space -top FILE).
  curl -s --unix-socket "$lab/$L/hpc.sock" -o "$BENCH_HEAP" http://x/debug/pprof/heap
fi
c0=$(cpu)
if [[ -n ${BENCH_PROFILE:-} ]]; then
  # The leader's CPU profile over the same 10 s (go tool pprof -top FILE).
  curl -s --unix-socket "$lab/$L/hpc.sock" -o "$BENCH_PROFILE" 'http://x/debug/pprof/profile?seconds=10'
else
  sleep 10
fi
c1=$(cpu)
printf 'leader CPU (%d pending, idle)\t%s\tms/s\n' "$JOBS" "$(awk -v a="$c0" -v b="$c1" -v t="$tick" 'BEGIN { printf "%.1f", (b - a) * 1000 / t / 10 }')"
printf 'host CPU steal (from the submits to the end)\t%s\t%%\n' "$(steal_share "$steal0" "$(cpu_ticks)")"
