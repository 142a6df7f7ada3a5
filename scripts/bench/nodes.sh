#!/usr/bin/env bash
# A cluster of 1,000 nodes on one machine: four real node daemons (node1-3
# controllers, node4 a compute node) and SIM simulated compute nodes
# (scripts/bench/simnodes: each a member of the cluster's gossip, as a node
# daemon is, with no agent behind it).
#
#   scripts/bench/nodes.sh [SIM]      (default 1000; as root or any user)
#
# Prints, one `figure<TAB>value<TAB>unit` line each:
#   nodes UP               seconds from the simulated nodes' start until the
#                          leader shows all SIM+4 nodes idle
#   leader CPU             the leader's CPU time per second over 20 s with
#                          every node idle, ms/s
#   simnodes CPU           the simulator's, for scale (all SIM gossip
#                          members in one process), ms/s
#   sinfo / squeue         median of 5, ms
#   controller RSS         the leader's, MiB
#   host CPU steal         of the machine's busy CPU time from the
#                          simulator's start to the end, the share a virtual
#                          machine's host took for something else, %
# The real nodes listen on 127.0.110.1-4, ports 35217-35219 (reserved in
# e2e/helpers_test.go's labAddrs); the simulated ones on 127.1.0.1 onward
# (250 to an octet), the same ports.
set -euo pipefail
SIM=${1:-1000}
NET=127.0.110
PORT=35217
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/hpc-nodes-XXXXXX)
chmod 755 "$work"
lab=$work/lab
hpc=$work/hpc
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  sleep 1
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "nodes: $*" >&2; }
. "$root/scripts/bench/lib.sh" # timed, cpu_ticks, steal_share

(cd "$root" && go build -tags "$(cat scripts/go-tags)" -o "$hpc" . && go build -o "$work/simnodes" ./scripts/bench/simnodes)
mkdir -p "$lab" "$work/bin"
for c in sbatch squeue sinfo scontrol; do ln -s "$hpc" "$work/bin/$c"; done
{
  echo "ClusterName=lab"
  for i in 1 2 3; do echo "SlurmctldHost=node$i($NET.$i)"; done
  echo "HpcApiPort=$PORT"
  echo "HpcRaftPort=$((PORT + 1))"
  echo "HpcGossipPort=$((PORT + 2))"
  echo "DefMemPerCPU=1000"
  echo "MaxJobCount=100000"
  echo "NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000"
  echo "NodeName=node[1-4] NodeAddr=$NET.[1-4]"
  for ((first = 1; first <= SIM; first += 250)); do
    last=$((first + 249 < SIM ? first + 249 : SIM))
    printf 'NodeName=sim[%04d-%04d] NodeAddr=127.1.%d.[1-%d]\n' "$first" "$last" $(((first - 1) / 250)) $((last - first + 1))
  done
  printf 'PartitionName=debug Nodes=node[1-4],sim[0001-%04d] Default=YES MaxTime=1-00:00:00 State=UP\n' "$SIM"
} >"$lab/slurm.conf"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$lab/cluster.key"
echo >>"$lab/cluster.key"
chmod 600 "$lab/cluster.key"
export HPC_DIR=$lab PATH=$work/bin:$PATH
for i in 1 2 3 4; do
  mkdir -p "$lab/node$i"
  setsid "$hpc" daemon --name "node$i" --dir "$lab" --plain >"$lab/node$i.log" 2>&1 &
  pids+=($!)
done
for ((t = 0; t < 300; t++)); do
  L=$("$hpc" status 2>/dev/null | awk '/^Leader:/ { print $2 }') || true
  [[ ${L:-} == node[1-3] ]] && break
  sleep 0.2
done
log "leader $L; starting $SIM simulated nodes"
a=$(date +%s.%N)
steal0=$(cpu_ticks)
"$work/simnodes" -config "$lab/slurm.conf" -key "$lab/cluster.key" >"$work/simnodes.log" 2>&1 &
sim=$!
pids+=($sim)
want=$((SIM + 4))
for ((t = 0; t < 600; t++)); do
  up=$(sinfo -h -N -t idle -o %N 2>/dev/null | wc -l) || up=0
  [[ $up -ge $want ]] && break
  sleep 0.5
done
b=$(date +%s.%N)
if [[ $up -ge $want ]]; then
  printf 'nodes UP (%d)\t%s\ts\n' "$want" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", b - a }')"
else
  # The figures below are still taken, with the nodes that made it.
  log "only $up of $want nodes idle after 300 s"
  printf 'nodes idle after 300 s (of %d)\t%s\tnodes\n' "$want" "$up"
fi
L=$("$hpc" status | awk '/^Leader:/ { print $2 }')
pid=$(pgrep -f -- "daemon --name $L --dir $lab" | head -1)
tick=$(getconf CLK_TCK)
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
c0=$(cpu "$pid"); s0=$(cpu "$sim"); sleep 20; c1=$(cpu "$pid"); s1=$(cpu "$sim")
rate() { awk -v a="$1" -v b="$2" -v t="$tick" 'BEGIN { printf "%.1f", (b - a) * 1000 / t / 20 }'; }
printf 'leader CPU (%d nodes idle)\t%s\tms/s\n' "$want" "$(rate "$c0" "$c1")"
printf 'simnodes CPU (%d members)\t%s\tms/s\n' "$SIM" "$(rate "$s0" "$s1")"
printf 'sinfo (%d nodes)\t%s\tms\n' "$want" "$(timed 5 sinfo)"
printf 'sinfo -N (%d nodes)\t%s\tms\n' "$want" "$(timed 5 sinfo -N)"
printf 'squeue (%d nodes)\t%s\tms\n' "$want" "$(timed 5 squeue)"
printf 'controller RSS (%d nodes)\t%s\tMiB\n' "$want" "$(awk '/^VmRSS/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")"
printf 'host CPU steal (from the simulator start)\t%s\t%%\n' "$(steal_share "$steal0" "$(cpu_ticks)")"
