#!/usr/bin/env bash
# Starts Debian's Slurm 22.05 (slurmctld and one slurmd per node, on this
# machine's loopback) on the files `hpc export slurm` wrote, and runs jobs
# through it: a batch job over two nodes (COMPLETED, its output checked) and,
# when the export has GPUs, an srun step that asks for one.
#
#   scripts/export-check.sh [EXPORT_DIR]      (as root)
#
# Without EXPORT_DIR it exports cluster/export/testdata/lab (a 4-node lab with
# fake GPUs and a topology) with `hpc export slurm --config` first. The export
# must be of a cluster on one machine (hpc's lab: every address on loopback),
# which the exporter writes with one Port per node for `slurmd -N NODE`.
#
# What the export leaves to the admin (README there) is done here in a
# scratch directory of its own: a munge key and a munged on a socket of its
# own (AuthInfo=socket=...), the state, spool, pid and log paths, and no
# slurmdbd (accounting_storage/none: sacctmgr.sh is not loaded). GRES device
# files that are not under /dev (the lab's fake GPUs) become links to
# /dev/null there. Nothing outside the scratch directory is changed, and
# every daemon it started is stopped at the end, by its pid file.
# HPC_EXPORT_CHECK_KEEP=1 keeps the scratch directory (logs) afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# Debian's commands, never hpc's links of the same names.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

say() { printf '[export-check %s] %s\n' "$(date +%T)" "$*"; }
die() { say "FAIL: $*"; exit 1; }

for cmd in slurmctld slurmd sbatch srun scontrol sinfo munged; do
  command -v $cmd >/dev/null || die "$cmd is not installed (apt-get install slurmctld slurmd slurm-client munge)"
done
[[ $(id -u) == 0 ]] || die "run as root (slurmd runs as root)"
id slurm >/dev/null 2>&1 || die "no user slurm (Debian's slurmctld package makes it)"

work=$(mktemp -d /tmp/hpc-export-check.XXXXXX)
chmod 755 "$work"
mkdir -p "$work"/{etc,ctld,spool,run,log,munge,fakedev}
started=() # pid files of what this script started
nodes=

cleanup() {
  local rc=$? pf pid i
  # slurmd first, then slurmctld, then munged: the reverse of the start.
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    pf=${started[i]}
    [[ -s $pf ]] || continue
    pid=$(cat "$pf")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  # The empty cgroups slurmd made for its nodes (cgroup v1:
  # /sys/fs/cgroup/<controller>/slurm_<node>/...; rmdir leaves any in use).
  for n in ${nodes:-}; do
    find /sys/fs/cgroup -depth -type d -path "*/slurm_$n*" -exec rmdir {} + 2>/dev/null || true
  done
  if ((rc != 0)); then
    for f in "$work"/log/*.log; do
      [[ -s $f ]] && { echo "--- $f (last lines)"; tail -n 15 "$f"; }
    done
  fi
  if [[ ${HPC_EXPORT_CHECK_KEEP:-0} == 1 ]]; then
    say "kept $work"
  else
    rm -rf "$work"
  fi
  exit $rc
}
trap cleanup EXIT

export_dir=${1:-}
if [[ -z $export_dir ]]; then
  hpc=$root/bin/hpc
  if [[ ! -x $hpc ]]; then
    say "building bin/hpc"
    (export PATH=/usr/local/go/bin:$PATH; make -s build >/dev/null)
  fi
  export_dir=$work/export
  "$hpc" export slurm --config cluster/export/testdata/lab/slurm.conf "$export_dir" >/dev/null
fi
[[ -s $export_dir/slurm.conf ]] || die "no slurm.conf in $export_dir"
cp "$export_dir"/*.conf "$work/etc/"
conf=$work/etc/slurm.conf

# The paths and services the README leaves to the admin, here in $work.
set_key() { # KEY VALUE: replace the key's line, or add one
  if grep -qi "^$1=" "$conf"; then
    sed -i "s|^$1=.*|$1=$2|I" "$conf"
  else
    echo "$1=$2" >>"$conf"
  fi
}
set_key StateSaveLocation "$work/ctld"
set_key SlurmdSpoolDir "$work/spool/%n"
set_key SlurmctldPidFile "$work/run/slurmctld.pid"
set_key SlurmdPidFile "$work/run/slurmd-%n.pid"
set_key SlurmctldLogFile "$work/log/slurmctld.log"
set_key SlurmdLogFile "$work/log/slurmd-%n.log"
set_key AuthInfo "socket=$work/munge/munge.socket.2"
set_key AccountingStorageType accounting_storage/none
sed -i -E '/^(AccountingStorage(Enforce|Host|Port|TRES))=/d' "$conf"
# Fake GRES devices (not under /dev): links to /dev/null here.
if [[ -s $work/etc/gres.conf ]]; then
  while read -r file; do
    base=${file##*/}
    prefix=${base%%[*}
    if [[ $base =~ \[([0-9]+)-([0-9]+)\]$ ]]; then
      for i in $(seq "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}"); do ln -sfn /dev/null "$work/fakedev/$prefix$i"; done
    else
      ln -sfn /dev/null "$work/fakedev/$base"
    fi
    gres=$(<"$work/etc/gres.conf")
    printf '%s\n' "${gres//"File=$file"/"File=$work/fakedev/$base"}" >"$work/etc/gres.conf"
  done < <(grep -o 'File=[^ ]*' "$work/etc/gres.conf" | cut -d= -f2 | grep -v '^/dev/' | sort -u)
fi
chown slurm "$work/ctld"
export SLURM_CONF=$conf
nodes=$(sed -n -E 's/^NodeName=([^ ]+) .*Port=.*/\1/p' "$conf" | grep -v -x DEFAULT || true)
[[ -n $nodes ]] || die "no NodeName line with a Port: not the export of a cluster on one machine"
count=$(wc -w <<<"$nodes")

say "munged on $work/munge"
chown munge:munge "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
runuser -u munge -- munged --socket="$work/munge/munge.socket.2" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed"
started+=("$work/munge/munged.pid")

say "slurmctld on $(sed -n 's/^SlurmctldHost=//p' "$conf" | head -1)"
slurmctld
started+=("$work/run/slurmctld.pid")
for _ in $(seq 1 100); do scontrol ping 2>/dev/null | grep -q UP && break; sleep 0.2; done
scontrol ping | grep -q UP || die "slurmctld does not answer"
for n in $nodes; do
  mkdir -p "$work/spool/$n"
  slurmd -N "$n"
  started+=("$work/run/slurmd-$n.pid")
done
say "slurmd for $(tr '\n' ' ' <<<"$nodes")"
idle=0
for _ in $(seq 1 150); do
  idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
  ((idle >= count)) && break
  sleep 0.2
done
sinfo
((idle >= count)) || die "only $idle of $count nodes idle"

say "sbatch -N2 over two nodes"
out=$work/job.out
id=$(sbatch --parsable -N2 -o "$out" --wrap 'srun -l hostname; echo done')
state=
for _ in $(seq 1 300); do
  state=$(scontrol -o show job "$id" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  [[ $state == COMPLETED || $state == FAILED || $state == CANCELLED || $state == TIMEOUT ]] && break
  sleep 0.2
done
[[ $state == COMPLETED ]] || die "job $id ended $state"
[[ $(grep -c ': ' "$out") == 2 ]] && grep -qx done "$out" || die "job $id's output: $(cat "$out")"
say "job $id COMPLETED; output: $(tr '\n' ' ' <"$out")"

if grep -q '^GresTypes=.*gpu' "$conf"; then
  gpu=$(sinfo -h -o '%P %G' | awk '$2 ~ /gpu/ {sub(/\*$/, "", $1); print $1; exit}')
  say "srun -p $gpu --gres=gpu:1"
  cvd=$(srun -p "$gpu" --gres=gpu:1 printenv CUDA_VISIBLE_DEVICES)
  [[ $cvd == 0 ]] || die "a step with --gres=gpu:1 saw CUDA_VISIBLE_DEVICES=$cvd"
fi
say "ok: Slurm 22.05 ran the export of $export_dir"
