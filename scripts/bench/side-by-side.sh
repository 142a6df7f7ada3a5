#!/usr/bin/env bash
# Slurm and hpc side by side, in one run on this machine: the same workload
# (scripts/bench/workload.sh) against
#   1. Debian's Slurm 22.05, brought up by the reference lab's setup.sh (4 nodes
#      x 2 CPUs: one slurmctld and four slurmd on 127.0.0.1, ports 6817-6819 and
#      17001-17004, slurmdbd and MariaDB for accounting, its "tuned" profile),
#      then stopped by its teardown.sh;
#   2. an hpc lab of the same shape (`hpc up --nodes 4 --config ...`: node1-node3
#      are the controllers, node4 runs jobs only; steps in containers as root),
#      on 127.0.103.1-4 with ports 34317-34319 (reserved in e2e/helpers_test.go's
#      labAddrs, so no test lab meets it), then stopped;
# and prints one Markdown table: figure | Slurm | hpc | hpc/Slurm | better |
# ahead. The table, with both runs' raw figures and logs, is saved under the
# results directory and its path printed.
#
#   scripts/bench/side-by-side.sh [--quick]      (as root; --quick: small sizes)
#
# Environment:
#   SLURM_LAB      the reference lab's directory (default: ../shared/slurm-lab
#                  beside the repository); its setup.sh and teardown.sh are run,
#                  never changed
#   SLURM_BIN      where Slurm's commands are (default /usr/bin)
#   BENCH_RESULTS  the results directory (default bench-results/ in the repository)
#   BENCH_*        passed on to workload.sh (sizes, timeouts)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export PATH=$PATH:/usr/local/go/bin

quick=()
[[ ${1:-} == --quick ]] && quick=(--quick)
SLURM_LAB=${SLURM_LAB:-$root/../shared/slurm-lab}
SLURM_BIN=${SLURM_BIN:-/usr/bin}
RESULTS=${BENCH_RESULTS:-$root/bench-results}
NET=127.0.103
PORT=34317

log() { printf '[side-by-side %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root: the Slurm lab's setup.sh and hpc's containers need it"
[[ -x $SLURM_LAB/setup.sh && -x $SLURM_LAB/teardown.sh ]] || die "no setup.sh/teardown.sh in $SLURM_LAB (set SLURM_LAB)"

# One run at a time on this machine: both clusters use fixed addresses.
exec 9>/tmp/hpc-bench-side-by-side.lock
flock -n 9 || die "another side-by-side run holds /tmp/hpc-bench-side-by-side.lock"

# A Slurm lab someone else started must not be taken over or torn down.
port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
for p in 6817 6818 6819 17001 17002 17003 17004; do
  port_busy "$p" && die "port $p is in use: a Slurm lab (or something else) already runs here; stop it first ($SLURM_LAB/teardown.sh if it is that lab)"
done
for p in $PORT $((PORT + 1)) $((PORT + 2)); do
  ss -Hltn "src $NET.0/24 and sport = :$p" 2>/dev/null | grep -q . && die "$NET.x port $p is in use: an hpc lab of this script may still run"
done

stamp=$(date +%Y%m%d-%H%M%S)
mkdir -p "$RESULTS"
out=$RESULTS/side-by-side-$stamp
work=$(mktemp -d /tmp/hpc-bench-sbs-XXXXXX)
chmod 755 "$work"   # jobs run as root, but the lab's storage areas are made for every user
hpc=$work/bin/hpc
lab=$work/lab
slurm_up=0
hpc_up=0
cleanup() {
  if [[ $slurm_up == 1 ]]; then "$SLURM_LAB/teardown.sh" >&2 || true; fi
  if [[ $hpc_up == 1 ]]; then "$hpc" down --dir "$lab" >/dev/null 2>&1 || true; fi
  # A step's root file system binds the host's: unmount whatever a daemon
  # left mounted below the work directory before removing it, and never
  # cross into another file system.
  awk -v w="$work/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r |
    while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

log "building hpc"
go build -tags "$(cat scripts/go-tags)" -o "$hpc" .
"$hpc" install-links "$work/bin" >/dev/null

# A workload that fails still leaves the figures it made before failing:
# the table shows them, and says which run failed (its log says why).
failed=()
load() { cut -d' ' -f1-3 /proc/loadavg; }
. "$root/scripts/bench/lib.sh" # cpu_ticks, steal_share
machine="$(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
started=$(date '+%Y-%m-%d %H:%M %Z')

# ---------------------------------------------------------------- Slurm
log "Slurm: $SLURM_LAB/setup.sh (PROFILE=tuned, CLEAN=1: an empty controller and accounting database)"
slurm_up=1
PROFILE=tuned CLEAN=1 "$SLURM_LAB/setup.sh" >"$out.slurm-setup.log" 2>&1 ||
  { cat "$out.slurm-setup.log" >&2; die "the Slurm lab did not come up (log above)"; }
[[ $(readlink -f "$SLURM_BIN/sbatch") != "$(readlink -f "$hpc")" ]] || die "$SLURM_BIN/sbatch is hpc, not Slurm"
load_slurm=$(load)
log "Slurm: workload (load average $load_slurm)"
t0=$(cpu_ticks)
env -u HPC_DIR -u HPC_SOCKET -u SLURM_CONF PATH="$SLURM_BIN:$PATH" \
  BENCH_CTLD_PGREP='^slurmctld( |$)' BENCH_NODED_PGREP='^slurmd -N node4( |$)' BENCH_NODED_NAME=node4 \
  "$root/scripts/bench/workload.sh" "${quick[@]}" >"$out.slurm.tsv" 2> >(tee "$out.slurm.log" >&2) ||
  failed+=("Slurm")
steal_slurm=$(steal_share "$t0" "$(cpu_ticks)")
log "Slurm: $SLURM_LAB/teardown.sh"
"$SLURM_LAB/teardown.sh" >>"$out.slurm-setup.log" 2>&1
slurm_up=0

# ---------------------------------------------------------------- hpc
# The reference lab's shape and the settings that bear on the figures: 4
# nodes x 2 cores, 4000 MB, fake GPUs on node3-4, partitions debug and gpu,
# DefMemPerCPU=1000, MinJobAge=60 and MaxJobCount=100000 as its tuned profile.
cat >"$work/slurm.conf" <<EOF
ClusterName=lab
SlurmctldHost=node1($NET.1)
SlurmctldHost=node2($NET.2)
SlurmctldHost=node3($NET.3)
HpcApiPort=$PORT
HpcRaftPort=$((PORT + 1))
HpcGossipPort=$((PORT + 2))
DefMemPerCPU=1000
MinJobAge=60
MaxJobCount=100000
EnforcePartLimits=ALL
AccountingStorageType=accounting_storage/slurmdbd
PriorityType=priority/basic
GresTypes=gpu
NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000
NodeName=node[1-2] NodeAddr=$NET.[1-2]
NodeName=node[3-4] NodeAddr=$NET.[3-4] Gres=gpu:2
PartitionName=debug Nodes=node[1-4] Default=YES MaxTime=1-00:00:00 State=UP
PartitionName=gpu Nodes=node[3-4] MaxTime=1-00:00:00 State=UP
EOF
log "hpc: hpc up --nodes 4 on $NET.1-4"
hpc_up=1
"$hpc" up --dir "$lab" --nodes 4 --config "$work/slurm.conf" >"$out.hpc-setup.log" 2>&1 ||
  { cat "$out.hpc-setup.log" >&2; die "the hpc lab did not come up (log above)"; }
steps=$(HPC_DIR=$lab "$hpc" status | sed -n 's/^Steps: *//p')
load_hpc=$(load)
log "hpc: workload (steps: $steps; load average $load_hpc)"
t0=$(cpu_ticks)
# The leader (the controller) is looked up at each measurement: it is the
# node whose daemon Raft elected, and may move. node4 is not a controller.
env -u HPC_SOCKET -u SLURM_CONF PATH="$work/bin:$PATH" HPC_DIR="$lab" \
  BENCH_CTLD_PID_CMD="cat $lab/\$(HPC_DIR=$lab $hpc status | awk '/^Leader:/ { print \$2 }')/hpc.pid" \
  BENCH_NODED_PID_CMD="cat $lab/node4/hpc.pid" BENCH_NODED_NAME=node4 \
  "$root/scripts/bench/workload.sh" "${quick[@]}" >"$out.hpc.tsv" 2> >(tee "$out.hpc.log" >&2) ||
  failed+=("hpc")
steal_hpc=$(steal_share "$t0" "$(cpu_ticks)")
"$hpc" down --dir "$lab" >>"$out.hpc-setup.log" 2>&1
hpc_up=0

# ---------------------------------------------------------------- the table
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -z $(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null) ]] || commit="$commit+changes"
{
  echo "Slurm 22.05.8 (Debian 12, $(realpath --relative-to="$root" "$SLURM_LAB"), tuned profile) against hpc $commit; 4 nodes x 2 CPUs on one machine."
  echo
  echo "- Date: $started"
  echo "- Machine: $machine; load average (1, 5, 15 min) at the start of each run: Slurm $load_slurm, hpc $load_hpc"
  echo "- CPU steal during each workload (of the machine's busy CPU time, the share a virtual machine's host took for something else; 0 on a machine that is not virtual): Slurm $steal_slurm%, hpc $steal_hpc%"
  echo "- Command: \`scripts/bench/side-by-side.sh${quick:+ --quick}\` (as root)"
  for f in "${failed[@]}"; do echo "- The $f workload failed part-way (see its log); its missing figures show as -."; done
  echo "- hpc steps: $steps; node daemon: node4 (Slurm: its slurmd; hpc: a node that is not a controller)"
  echo
  echo "| figure | Slurm | hpc | hpc/Slurm | better | ahead |"
  echo "|---|---:|---:|---:|---|---|"
  # Join on the figure name, in the order the workload printed them.
  awk -F'\t' '
    FILENAME == ARGV[1] { h[$1] = $2; u[$1] = $3; order[++n] = $1; next }
    {
      fig = $1; s = $2; unit = $3
      x = (fig in h) ? h[fig] : ""
      hi = (unit == "jobs/s")
      ratio = "n/a"; ahead = "-"
      if (x != "" && s + 0 != 0) ratio = sprintf("%.2f", x / s)
      if (x != "" && fig !~ /\(baseline\)/) {
        if (x + 0 == s + 0) ahead = "even"
        else if ((hi && x + 0 > s + 0) || (!hi && x + 0 < s + 0)) ahead = "hpc"
        else ahead = "Slurm"
      }
      printf "| %s | %s %s | %s %s | %s | %s | %s |\n", fig, s, unit, (x == "" ? "-" : x), (x == "" ? "" : unit), ratio, (hi ? "higher" : "lower"), ahead
      seen[fig] = 1
    }
    END {
      # figures only hpc has (the Slurm run stopped early)
      for (i = 1; i <= n; i++) if (!(order[i] in seen)) printf "| %s | - | %s %s | n/a | %s | - |\n", order[i], h[order[i]], u[order[i]], (u[order[i]] == "jobs/s" ? "higher" : "lower")
    }' "$out.hpc.tsv" "$out.slurm.tsv"
} >"$out.md"
cat "$out.md"
echo
echo "saved: $out.md (raw figures and logs: $out.{slurm,hpc}.{tsv,log})"
