#!/usr/bin/env bash
# Step launch overhead and drain time, containers against plain processes:
#   1. the executor alone (go test -bench in exec/): create + run + wait +
#      destroy of a one-task step (`true`) and of a four-task step;
#   2. srun in an allocation on a 3-node lab: the wall time of `srun -n1
#      true` and `srun -N3 -n6 true` as a user sees it (median, p90 of R runs);
#   3. the drain time of N one-second-free jobs (`sbatch --wrap true`) on the lab.
# Usage: scripts/bench-steps.sh [N] [R]   (defaults 1000 and 50). Run as root:
# the container figures need it (without root only the plain ones are made).
set -euo pipefail
N=${1:-1000}
R=${2:-50}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/hpc-bench-steps-XXXXXX)
chmod 755 "$work"
hpc=$work/hpc
labs=()
cleanup() {
  for l in "${labs[@]}"; do "$hpc" down --dir "$l" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$here" && go build -tags "$(cat scripts/go-tags)" -o "$hpc" .)
mkdir -p "$work/bin"
for n in srun salloc sbatch; do ln -s "$hpc" "$work/bin/$n"; done
export PATH=$work/bin:$PATH
calc() { awk "BEGIN { printf \"%.${2:-1}f\", $1 }"; }

echo "== executor (go test -bench, exec/) =="
(cd "$here" && go test -run '^$' -bench 'BenchmarkLaunch(True|Tasks)' -benchtime "${R}x" ./exec/) |
  awk '/^Benchmark/ { printf "  %-34s mean %6.2f ms/step  median %6.2f ms\n", $1, $3 / 1e6, $5 }'

# lab NAME NET [--plain]: a 3-node lab on 127.0.NET.x.
lab() {
  local dir=$work/$1 net=$2
  shift 2
  cat >"$work/$net.conf" <<EOF
ClusterName=lab
SlurmctldHost=node1(127.0.$net.1)
SlurmctldHost=node2(127.0.$net.2)
SlurmctldHost=node3(127.0.$net.3)
HpcApiPort=2${net}17
HpcRaftPort=2${net}18
HpcGossipPort=2${net}19
DefMemPerCPU=500
KillWait=2
NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000
NodeName=node[1-3] NodeAddr=127.0.$net.[1-3]
PartitionName=debug Nodes=node[1-3] Default=YES MaxTime=1-00:00:00 State=UP
EOF
  "$hpc" up --dir "$dir" --config "$work/$net.conf" "$@" >/dev/null
  labs+=("$dir")
}

# steps MODE: srun wall times inside one allocation of the whole lab.
steps() {
  local mode=$1
  for shape in "-n1" "-N3 -n6"; do
    # shellcheck disable=SC2016
    salloc -Q -N3 -n6 sh -c '
      for i in $(seq '"$R"'); do
        a=$(date +%s%N); srun '"$shape"' true; b=$(date +%s%N); echo $(( (b - a) / 1000 ))
      done' | sort -n | awk -v mode="$mode" -v shape="$shape" '
      { v[NR] = $1 } END { printf "  %-12s srun %-8s median %6.1f ms  p90 %6.1f ms  (%d runs)\n", mode, shape, v[int((NR+1)/2)]/1000, v[int(NR*0.9)]/1000, NR }'
  done
}

# drain MODE: N trivial batch jobs, submitted one after another.
drain() {
  local mode=$1 t0 t1 t2
  t0=$(date +%s.%N)
  for ((i = 0; i < N; i++)); do sbatch --parsable -o /dev/null --wrap true >/dev/null; done
  t1=$(date +%s.%N)
  while "$hpc" queue -h | grep -q .; do sleep 0.2; done
  t2=$(date +%s.%N)
  echo "  $mode: $N jobs submitted in $(calc "$t1 - $t0") s; all done $(calc "$t2 - $t0") s after the first submit ($(calc "$N / ($t2 - $t0)") jobs/s)"
}

modes=(plain)
[ "$(id -u)" = 0 ] && modes=(containers plain)
net=94
for m in "${modes[@]}"; do
  if [ "$m" = plain ]; then lab "$m" $net --plain; else lab "$m" $net; fi
  export HPC_DIR=$work/$m
  echo "== $m: $("$hpc" status | sed -n 's/^Steps: *//p') =="
  steps "$m"
  drain "$m"
  "$hpc" down --dir "$work/$m" >/dev/null
  net=$((net + 1))
done
