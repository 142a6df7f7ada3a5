#!/usr/bin/env bash
# Runs N mixed jobs (default 1000) on a 3-node lab of its own and counts
# what they left behind: step cgroups, libcontainer state, mounts, job
# processes, $TMPDIRs and batch-script directories. Run as root (the steps
# run in containers). The mix, by job number modulo 10:
#   0-2 normal (true, echo), 3 failed (exit 3), 4 OOM (--mem=20M, 100M allocated),
#   5 cancelled while running (sleep 300), 6 cancelled (pending or running),
#   7 srun step on 2 nodes, 8 failing srun step on 2 nodes, 9 srun step over --mem (OOM)
# plus TIMEOUT jobs (-t 1: they take a minute; LEAK_TIMEOUTS=0 leaves them out).
# Prints the job states (sacct) and the leftovers; exits 1 if anything leaked.
# Usage: scripts/leak-check.sh [N]
set -euo pipefail
N=${1:-1000}
TIMEOUTS=${LEAK_TIMEOUTS:-2}
[ "$(id -u)" = 0 ] || { echo "run as root: steps run in libcontainer containers"; exit 1; }
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/hpc-leak-XXXXXX)
chmod 755 "$work"
lab=$work/lab
hpc=$work/hpc
cleanup() { "$hpc" down --dir "$lab" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here" && go build -tags "$(cat scripts/go-tags)" -o "$hpc" .)
mkdir -p "$work/bin"
for n in srun sbatch; do ln -s "$hpc" "$work/bin/$n"; done
cat >"$work/slurm.conf" <<'EOF'
ClusterName=lab
SlurmctldHost=node1(127.0.93.1)
SlurmctldHost=node2(127.0.93.2)
SlurmctldHost=node3(127.0.93.3)
HpcApiPort=29317
HpcRaftPort=29318
HpcGossipPort=29319
DefMemPerCPU=500
KillWait=2
GresTypes=gpu
NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000
NodeName=node[1-3] NodeAddr=127.0.93.[1-3]
PartitionName=debug Nodes=node[1-3] Default=YES MaxTime=1-00:00:00 State=UP
EOF
"$hpc" up --dir "$lab" --config "$work/slurm.conf" >/dev/null
export HPC_DIR=$lab PATH=$work/bin:$PATH
cd "$work"
now() { date +%s.%N; }

# What belongs to this lab: its nodes' cgroup parents (/hpc/<node>-<hash>),
# its state directory's mounts, the processes of its jobs (they carry a
# token in their environment).
token=leak$$
# A node's cgroup parent is /hpc/<node>-<first 8 hex digits of sha256(state dir)>.
parents() {
  local n
  for n in node1 node2 node3; do
    find /sys/fs/cgroup -mindepth 2 -maxdepth 3 -type d -path "*/hpc/$n-$(printf '%s' "$lab/$n/exec" | sha256sum | cut -c1-8)" 2>/dev/null
  done
}
cgroups() { parents | while read -r d; do find "$d" -mindepth 1 -maxdepth 1 -type d; done | grep -c . || true; }
# libcontainer's state: /run/hpc/<node>-<hash>/<step>.
containers() {
  local n
  for n in node1 node2 node3; do
    find "/run/hpc/$n-$(printf '%s' "$lab/$n/exec" | sha256sum | cut -c1-8)" -mindepth 1 -maxdepth 1 2>/dev/null
  done | grep -c . || true
}
mounts() { grep -c " $lab/" /proc/self/mountinfo || true; }
procs() { grep -l "HPC_LEAK=$token" /proc/[0-9]*/environ 2>/dev/null | grep -c . || true; }
tmpdirs() { find "$lab"/node*/tmp -mindepth 1 -maxdepth 1 2>/dev/null | grep -c . || true; }
jobdirs() { find "$lab"/node*/jobs -mindepth 1 -maxdepth 1 2>/dev/null | grep -c . || true; }
report() {
  printf '  %-28s %s\n' "step cgroups:" "$(cgroups)" "container states:" "$(containers)" \
    "mounts under the lab:" "$(mounts) (the nodes' own recursive binds of /)" \
    "job processes:" "$(procs)" "\$TMPDIRs:" "$(tmpdirs)" "batch script dirs:" "$(jobdirs)"
}
echo "before: (node cgroup parents, one per node and controller: $(parents | grep -c . || true))"
report
base_mounts=$(mounts)

submit() { HPC_LEAK=$token "$hpc" submit --parsable -o /dev/null "$@"; }
t0=$(now)
cancel=()
for ((i = 0; i < N; i++)); do
  case $((i % 10)) in
    0 | 1) submit --wrap true >/dev/null ;;
    2) submit --wrap 'echo hello; sleep 0.1' >/dev/null ;;
    3) submit --wrap 'exit 3' >/dev/null ;;
    4) submit --mem=20M --wrap 'dd if=/dev/zero of=/dev/null bs=100M count=1' >/dev/null ;;
    5 | 6) cancel+=("$(submit --wrap 'sleep 300 & wait')") ;;
    7) submit -N2 -n2 --wrap 'srun hostname' >/dev/null ;;
    8) submit -N2 -n2 --wrap 'srun sh -c "exit 5"' >/dev/null ;;
    9) submit -N2 --mem=20M --wrap 'srun dd if=/dev/zero of=/dev/null bs=100M count=1' >/dev/null ;;
  esac
  # Cancel in batches: some are running by then, some still pending.
  if ((${#cancel[@]} >= 20)); then "$hpc" cancel "${cancel[@]}" >/dev/null 2>&1 || true; cancel=(); fi
done
((${#cancel[@]} > 0)) && { "$hpc" cancel "${cancel[@]}" >/dev/null 2>&1 || true; }
for ((i = 0; i < TIMEOUTS; i++)); do submit -t 1 --wrap 'sleep 300' >/dev/null; done
t1=$(now)
while "$hpc" queue -h | grep -q .; do sleep 0.5; done
t2=$(now)
echo "$N jobs (+$TIMEOUTS timeouts): submitted in $(awk "BEGIN{printf \"%.1f\", $t1-$t0}") s, all ended $(awk "BEGIN{printf \"%.1f\", $t2-$t0}") s after the first submit"
echo "job states (sacct -X):"
"$hpc" acct -a -X -n -P -o State -S 2000-01-01 | sed 's/ by .*//' | sort | uniq -c | sed 's/^/  /'
echo "step states (sacct, steps .0):"
"$hpc" acct -a -n -P -o JobID,State -S 2000-01-01 | awk -F'|' '$1 ~ /\.0$/ {print $2}' | sort | uniq -c | sed 's/^/  /'
# Steps' clean-up runs right after the job's end is committed: give it a moment.
for ((i = 0; i < 50; i++)); do
  [ "$(cgroups)$(containers)$(procs)$(tmpdirs)$(jobdirs)" = 00000 ] && break
  sleep 0.2
done
echo "after the jobs:"
report
leaks=$(( $(cgroups) + $(containers) + $(procs) + $(tmpdirs) + $(jobdirs) + $(mounts) - base_mounts ))
"$hpc" down --dir "$lab" >/dev/null
echo "after hpc down:"
printf '  %-28s %s\n' "node cgroup parents:" "$(parents | grep -c . || true)" "mounts under the lab:" "$(mounts)"
leaks=$((leaks + $(mounts) + $(parents | grep -c . || true)))
if ((leaks > 0)); then echo "LEAKS: $leaks"; exit 1; fi
echo "no leaks"
