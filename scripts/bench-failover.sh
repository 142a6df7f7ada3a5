#!/usr/bin/env bash
# Leader failover on a 3-controller lab on this machine (127.0.89.x, ports
# 33717-33719, a directory of its own). R times (default 10):
#   - kill -9 the leader's daemon;
#   - right after, submit a job (sbatch, through a surviving node; the client
#     sends it again under its token while there is no leader);
#   (a) time until a new leader answers: squeue through a surviving node
#       succeeds (it is forwarded to, and answered by, the leader);
#   (b) time until scheduling has resumed: that job is RUNNING;
#   - restart the killed daemon (hpc up) and wait until all three nodes are
#     back and idle.
# Prints each round and the medians. Usage: scripts/bench-failover.sh [R]
# Run as root (hpc up makes its storage areas); steps run plain.
set -euo pipefail
R=${1:-10}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/hpc-bench-failover-XXXXXX)
chmod 755 "$work"
hpc=$work/hpc
lab=$work/lab
trap '"$hpc" down --dir "$lab" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
(cd "$here" && go build -tags "$(cat scripts/go-tags)" -o "$hpc" .)
"$hpc" install-links "$work/bin" >/dev/null
export PATH=$work/bin:$PATH
cat >"$work/slurm.conf" <<EOF
ClusterName=failover
SlurmctldHost=node1(127.0.89.1)
SlurmctldHost=node2(127.0.89.2)
SlurmctldHost=node3(127.0.89.3)
HpcApiPort=33717
HpcRaftPort=33718
HpcGossipPort=33719
DefMemPerCPU=500
KillWait=2
NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000
NodeName=node[1-3] NodeAddr=127.0.89.[1-3]
PartitionName=debug Nodes=node[1-3] Default=YES MaxTime=1-00:00:00 State=UP
EOF
"$hpc" up --dir "$lab" --config "$work/slurm.conf" --plain >/dev/null
export HPC_DIR=$lab
cd "$work"

ms() { awk "BEGIN { printf \"%.0f\", ($2 - $1) * 1000 }"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR+1)/2]; else printf "%.0f\n", (v[NR/2] + v[NR/2+1]) / 2 }'; }
sock() { echo "$lab/$1/hpc.sock"; }
# leader: the leader's name, as a node's status says.
leader() { HPC_SOCKET=$(sock "$1") "$hpc" status 2>/dev/null | awk '/^Leader:/ && $2 ~ /^node/ { print $2 }'; }
# settled: every node up, idle and agreeing on one leader.
settled() {
  local n l want=
  for n in node1 node2 node3; do
    l=$(leader "$n")
    [ -n "$l" ] || return 1
    [ -z "$want" ] || [ "$l" = "$want" ] || return 1
    want=$l
  done
  [ "$(HPC_SOCKET=$(sock node1) sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')" = 3 ]
}
wait_settled() {
  for ((w = 0; w < 600; w++)); do settled && return 0; sleep 0.1; done
  echo "the lab did not settle after a restart" >&2
  return 1
}

wait_settled
elect=() sched=()
printf '%-6s %-8s %-8s %12s %12s %12s\n' round killed leader "answers(ms)" "submitted(ms)" "running(ms)"
for ((i = 1; i <= R; i++)); do
  old=$(leader node1)
  pid=$(cat "$lab/$old/hpc.pid")
  for n in node1 node2 node3; do [ "$n" != "$old" ] && { via=$n; break; }; done
  export HPC_SOCKET
  HPC_SOCKET=$(sock "$via")
  rm -f "$work/id"
  t0=$EPOCHREALTIME
  kill -9 "$pid"
  (sbatch --parsable -o /dev/null -w "$via" --wrap 'sleep 300' >"$work/id.tmp" && mv "$work/id.tmp" "$work/id") &
  until squeue -h >/dev/null 2>&1; do sleep 0.01; done
  ta=$EPOCHREALTIME
  until [ -s "$work/id" ]; do sleep 0.01; done
  ts=$EPOCHREALTIME
  id=$(cat "$work/id")
  until [ "$(squeue -h -j "$id" -o %T 2>/dev/null)" = RUNNING ]; do sleep 0.01; done
  tb=$EPOCHREALTIME
  wait
  new=$(leader "$via")
  a=$(ms "$t0" "$ta") s=$(ms "$t0" "$ts") b=$(ms "$t0" "$tb")
  elect+=("$a") sched+=("$b")
  printf '%-6s %-8s %-8s %12s %12s %12s\n' "$i" "$old" "$new" "$a" "$s" "$b"
  scancel "$id"
  "$hpc" up --dir "$lab" >/dev/null
  unset HPC_SOCKET
  wait_settled
done
echo "median over $R failovers: a new leader answers after $(printf '%s\n' "${elect[@]}" | median) ms; a job submitted at the kill runs after $(printf '%s\n' "${sched[@]}" | median) ms"
