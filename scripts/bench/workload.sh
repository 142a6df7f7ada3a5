#!/usr/bin/env bash
# The performance workload, against whatever cluster the Slurm-named commands
# on PATH reach (hpc's links or a real Slurm's commands): the same commands and
# options for both, so that the figures compare.
#
#   scripts/bench/workload.sh [--quick]
#
# Figures (defaults; --quick or BENCH_QUICK=1 makes every size small):
#   client start      `sbatch --version` against /bin/true, each started from a
#                     bash loop (BENCH_N_START=200), ms per start and the difference
#   (d) srun          `srun -N2 hostname`, median of BENCH_N_SRUN=10, ms
#   (c) sbatch --wait `sbatch --wait --wrap true`, median of BENCH_N_WAIT=20, ms
#   (c') poll         submit, then `scontrol show job` every 20 ms until
#                     COMPLETED, median of BENCH_N_POLL=20, ms
#   (a) submit        BENCH_N_SUBMIT=1000 sequential `sbatch -n1 --wrap true`
#                     while the queue drains, jobs/s
#   (b) drain         first of those submits -> queue empty, jobs/s
#   (a') held submit  BENCH_N_HOLD=5000 sequential `sbatch --hold --wrap true`, jobs/s
#   (e) queries       squeue and sinfo with those jobs held, median of
#                     BENCH_N_QUERY=21, ms; then `scancel -u USER -t PENDING`
#                     until the queue is empty, s
#   (f) memory        the controller daemon's RSS idle and with the jobs held,
#                     and a node daemon's RSS, MiB; with the jobs held, each
#                     split into anonymous and file-backed pages
#
# Which processes are the daemons (for RSS; /proc/PID/status VmRSS):
#   BENCH_CTLD_PGREP   pgrep -f pattern of the controller (default '^slurmctld( |$)')
#   BENCH_CTLD_PID_CMD a shell command printing its PID, run at each measurement;
#                      wins over the pattern (hpc's leader can move between nodes)
#   BENCH_NODED_PGREP  pgrep -f pattern of one node daemon (default '^slurmd( |$)';
#                      the oldest match is taken)
#   BENCH_NODED_PID_CMD as BENCH_CTLD_PID_CMD, for the node daemon
#   BENCH_NODED_NAME   words for the table saying which node daemon (default: none)
# Other knobs:
#   BENCH_USER         the user whose pending jobs scancel removes (default: this user)
#   BENCH_TIMEOUT      seconds any single wait may take before the run fails (600)
#   BENCH_SETTLE_MAX   seconds to wait for finished jobs to leave the controller
#                      (`squeue -t all` empty) before the large figures (180);
#                      records both Slurm and hpc keep for MinJobAge after a
#                      job ends make squeue and scheduling slower, so each large
#                      figure starts from an empty controller
#   BENCH_WORKDIR      where jobs are submitted from (their slurm-*.out land
#                      there; default a new temporary directory, removed after)
#
# Output: on stdout one line per figure, `figure<TAB>value<TAB>unit` (jobs/s:
# higher is better; ms, s and MiB: lower is better), for scripts to join; on
# stderr the progress and, at the end, a readable summary.
set -euo pipefail

QUICK=${BENCH_QUICK:-0}
[[ ${1:-} == --quick ]] && QUICK=1
if [[ $QUICK == 1 ]]; then
  d_start=20 d_srun=3 d_wait=3 d_poll=5 d_submit=100 d_hold=300 d_query=3 d_settle=90
else
  d_start=200 d_srun=10 d_wait=20 d_poll=20 d_submit=1000 d_hold=5000 d_query=21 d_settle=180
fi
N_START=${BENCH_N_START:-$d_start}
N_SRUN=${BENCH_N_SRUN:-$d_srun}
N_WAIT=${BENCH_N_WAIT:-$d_wait}
N_POLL=${BENCH_N_POLL:-$d_poll}
N_SUBMIT=${BENCH_N_SUBMIT:-$d_submit}
N_HOLD=${BENCH_N_HOLD:-$d_hold}
N_QUERY=${BENCH_N_QUERY:-$d_query}
SETTLE_MAX=${BENCH_SETTLE_MAX:-$d_settle}
TIMEOUT=${BENCH_TIMEOUT:-600}
USER_NAME=${BENCH_USER:-$(id -un)}
CTLD_PGREP=${BENCH_CTLD_PGREP:-'^slurmctld( |$)'}
NODED_PGREP=${BENCH_NODED_PGREP:-'^slurmd( |$)'}
NODED_NAME=${BENCH_NODED_NAME:-}

log() { printf '[workload %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

for c in sbatch srun squeue sinfo scancel scontrol; do
  command -v "$c" >/dev/null || die "$c is not on PATH: put the cluster's Slurm-named commands there"
done
# Everything the controller is asked goes through timeout(1): a cluster that
# stops answering must fail the run, not hang it.
q() { timeout 60 "$@"; }
if ! out=$(q sinfo -h -o %P 2>&1) || [[ -z $out ]]; then
  die "the cluster that $(command -v sinfo) talks to does not answer (sinfo: ${out:-no partitions}); is it up?"
fi

workdir=${BENCH_WORKDIR:-}
own_workdir=0
if [[ -z $workdir ]]; then
  workdir=$(mktemp -d /tmp/bench-workload-XXXXXX)
  chmod 755 "$workdir"   # the jobs' user must be able to write their output here
  own_workdir=1
fi
summary=$(mktemp /tmp/bench-summary-XXXXXX)
cleanup() {
  # Leave no job behind on the cluster, whatever failed.
  q scancel -u "$USER_NAME" >/dev/null 2>&1 || true
  rm -f "$summary"
  if [[ $own_workdir == 1 ]]; then rm -rf "$workdir"; fi
}
trap cleanup EXIT
cd "$workdir"

# emit FIGURE VALUE UNIT: the machine-readable line, and one for the summary.
emit() {
  printf '%s\t%s\t%s\n' "$1" "$2" "$3"
  printf '  %-64s %10s %s\n' "$1" "$2" "$3" >>"$summary"
  log "$1: $2 $3"
}
# fmt EXPR [DECIMALS]: an arithmetic expression of numbers, evaluated by awk.
fmt() { awk "BEGIN { printf \"%.${2:-1}f\", $1 }"; }
# ms and median (lib.sh).
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# jobid: Slurm's --parsable prints "ID" or "ID;CLUSTER".
jobid() { local s; s=$(q sbatch --parsable "$@") || return 1; echo "${s%%;*}"; }

# each N CMD...: run CMD N times, printing each run's wall time in ms; its
# caller puts the whole loop under one timeout(1) (run_each) rather than each
# run, so that no extra process is timed with the command.
each() {
  local n=$1 i a b
  shift
  for ((i = 0; i < n; i++)); do
    a=$EPOCHREALTIME
    "$@" >/dev/null || { echo "failed: $*" >&2; return 1; }
    b=$EPOCHREALTIME
    echo "$a $b"
  done | awk '{ printf "%.1f\n", ($2 - $1) * 1000 }'
  return "${PIPESTATUS[0]}"
}
export -f each
run_each() { timeout "$TIMEOUT" bash -c 'each "$@"' each "$@"; }

# queue_ids [SQUEUE-ARGS]: the job ids squeue lists; fails when squeue fails,
# so that an error never reads as an empty queue.
queue_ids() { q squeue -h -o %i "$@"; }
# wait_until WHAT CMD...: run CMD every 0.1 s until it succeeds, BENCH_TIMEOUT at most.
wait_until() {
  local what=$1 deadline=$((SECONDS + TIMEOUT))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for $what"
    sleep 0.1
  done
}
queue_empty() { local s; s=$(queue_ids 2>/dev/null) && [[ -z $s ]]; }
records_gone() { local s; s=$(queue_ids -t all 2>/dev/null) && [[ -z $s ]]; }
# idle: the queue is empty (held leftovers cancelled first). With "records",
# also wait (BENCH_SETTLE_MAX at most) until finished jobs have left the
# controller's memory, so the next figure starts from an empty controller.
idle() {
  if [[ -n $(queue_ids -t PD 2>/dev/null) ]]; then q scancel -u "$USER_NAME" -t PENDING >/dev/null 2>&1 || true; fi
  wait_until "the queue to drain" queue_empty
  if [[ ${1:-} == records ]]; then
    local t0=$SECONDS
    until records_gone; do
      if ((SECONDS - t0 >= SETTLE_MAX)); then
        log "finished jobs still held by the controller after ${SETTLE_MAX}s; going on"
        return 0
      fi
      sleep 1
    done
    log "controller empty after $((SECONDS - t0))s"
  fi
}

# pid_of PGREP-PATTERN PID-CMD: a daemon's PID, by its command or its pattern.
pid_of() {
  local pat=$1 cmd=$2 pid
  if [[ -n $cmd ]]; then pid=$(bash -c "$cmd" 2>/dev/null | head -1); else pid=$(pgrep -o -f -- "$pat" || true); fi
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}
# rss PID: resident set size in MiB.
rss() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# rss_anon PID, rss_file PID: the two parts of it, MiB. Anonymous memory
# (heap, stacks) is the process's own; file-backed pages (its program, its
# libraries, files it maps: a database) are the page cache's, shared with
# every process that maps the same file and dropped under memory pressure.
rss_anon() { awk '/^RssAnon:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss_file() { awk '/^RssFile:|^RssShmem:/ { kb += $2 } END { printf "%.1f", kb / 1024 }' "/proc/$1/status"; }
# emit_rss NAME PID: NAME's RSS and, as two more figures, its parts.
emit_rss() {
  local name=$1 pid=$2
  emit "$name" "$(rss "$pid")" MiB
  emit "$name: anonymous" "$(rss_anon "$pid")" MiB
  emit "$name: file-backed" "$(rss_file "$pid")" MiB
}
ctld_pid() { pid_of "$CTLD_PGREP" "${BENCH_CTLD_PID_CMD:-}"; }
noded_pid() { pid_of "$NODED_PGREP" "${BENCH_NODED_PID_CMD:-}"; }
ctld_pid >/dev/null || die "no controller process found (BENCH_CTLD_PGREP='$CTLD_PGREP'${BENCH_CTLD_PID_CMD:+, BENCH_CTLD_PID_CMD='$BENCH_CTLD_PID_CMD'})"
noded_pid >/dev/null || die "no node daemon found (BENCH_NODED_PGREP='$NODED_PGREP'${BENCH_NODED_PID_CMD:+, BENCH_NODED_PID_CMD='$BENCH_NODED_PID_CMD'})"

log "cluster: $(command -v sbatch) ($(q sbatch --version 2>&1 | head -1)); $(q sinfo -h -o '%D nodes, %C CPUs (A/I/O/T)' -p "$(q sinfo -h -o %P | sed -n 's/\*$//p' | head -1)")"
log "user $USER_NAME, jobs run from $workdir"
idle records

# ---------------------------------------------------------------- client start
# Both started the same way, fork+exec from this bash, so the difference is
# what the command itself costs before it can do anything.
log "client start: $N_START x sbatch --version, $N_START x /bin/true"
t0=$EPOCHREALTIME
for ((i = 0; i < N_START; i++)); do sbatch --version >/dev/null; done
t1=$EPOCHREALTIME
for ((i = 0; i < N_START; i++)); do /bin/true; done
t2=$EPOCHREALTIME
s_ms=$(awk -v a="$t0" -v b="$t1" -v n="$N_START" 'BEGIN { printf "%.2f", (b - a) * 1000 / n }')
t_ms=$(awk -v a="$t1" -v b="$t2" -v n="$N_START" 'BEGIN { printf "%.2f", (b - a) * 1000 / n }')
emit "client start: sbatch --version" "$s_ms" ms
emit "client start: /bin/true (baseline)" "$t_ms" ms
emit "client start: sbatch --version minus /bin/true" "$(fmt "$s_ms - $t_ms" 2)" ms

# ---------------------------------------------------------------- (f) idle RSS
emit "(f) controller RSS, idle" "$(rss "$(ctld_pid)")" MiB
emit "(f) node daemon RSS, idle${NODED_NAME:+ ($NODED_NAME)}" "$(rss "$(noded_pid)")" MiB

# ---------------------------------------------------------------- (d) srun
log "(d) $N_SRUN x srun -N2 hostname"
out=$(timeout 120 srun -N2 hostname) || die "srun -N2 hostname failed"
[[ $(wc -l <<<"$out") == 2 ]] || die "srun -N2 hostname printed: $out"
lat=$(run_each "$N_SRUN" srun -N2 hostname) || die "srun -N2 hostname failed"
emit "(d) srun -N2 hostname, median of $N_SRUN" "$(median <<<"$lat")" ms
idle

# ---------------------------------------------------------------- (c) sbatch --wait
log "(c) $N_WAIT x sbatch --wait --wrap true"
lat=$(run_each "$N_WAIT" sbatch --wait --wrap true) || die "sbatch --wait --wrap true failed"
emit "(c) sbatch --wait --wrap true, median of $N_WAIT" "$(median <<<"$lat")" ms
idle

# ---------------------------------------------------------------- (c') submit -> COMPLETED
# What a script that polls sees: the job's state from scontrol every 20 ms.
log "(c') $N_POLL x submit, then scontrol show job every 20 ms until COMPLETED"
lat=()
for ((i = 0; i < N_POLL; i++)); do
  a=$EPOCHREALTIME
  id=$(jobid --wrap true) || die "sbatch failed"
  deadline=$((SECONDS + TIMEOUT))
  while :; do
    st=$(q scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -1 || true)
    st=${st#JobState=}
    [[ $st == COMPLETED ]] && break
    case $st in FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
      die "job $id ended $st" ;;
    esac
    ((SECONDS < deadline)) || die "job $id not COMPLETED after ${TIMEOUT}s (state ${st:-unknown})"
    sleep 0.02
  done
  b=$EPOCHREALTIME
  lat+=("$(ms "$a" "$b")")
done
emit "(c') submit -> COMPLETED (scontrol poll 20 ms), median of $N_POLL" "$(printf '%s\n' "${lat[@]}" | median)" ms
idle records

# ---------------------------------------------------------------- (a) + (b)
log "(a)(b) $N_SUBMIT x sbatch -n1 --wrap true, one after another, while the queue drains"
t0=$EPOCHREALTIME
run_each "$N_SUBMIT" sbatch -n1 --wrap true >/dev/null || die "a submit of the $N_SUBMIT failed"
t1=$EPOCHREALTIME
wait_until "$N_SUBMIT jobs to finish" queue_empty
t2=$EPOCHREALTIME
emit "(a) sbatch -n1 --wrap true, $N_SUBMIT sequential" "$(awk -v a="$t0" -v b="$t1" -v n="$N_SUBMIT" 'BEGIN { printf "%.1f", n / (b - a) }')" jobs/s
emit "(b) drain: first submit -> queue empty, $N_SUBMIT jobs" "$(awk -v a="$t0" -v b="$t2" -v n="$N_SUBMIT" 'BEGIN { printf "%.1f", n / (b - a) }')" jobs/s
emit "(b) drain time, $N_SUBMIT jobs" "$(fmt "$t2 - $t0" 1)" s
idle records

# ---------------------------------------------------------------- (a') held, (e), (f)
log "(a') $N_HOLD x sbatch --hold --wrap true, one after another"
t0=$EPOCHREALTIME
run_each "$N_HOLD" sbatch --hold --wrap true >/dev/null || die "a held submit of the $N_HOLD failed"
t1=$EPOCHREALTIME
emit "(a) sbatch --hold --wrap true, $N_HOLD sequential" "$(awk -v a="$t0" -v b="$t1" -v n="$N_HOLD" 'BEGIN { printf "%.1f", n / (b - a) }')" jobs/s
n=$(queue_ids | wc -l)
[[ $n == "$N_HOLD" ]] || die "squeue lists $n jobs, not the $N_HOLD held"

# query NAME CMD...: median wall time of N_QUERY runs; the listing is read in
# full (to /dev/null) as a user's terminal would.
query() {
  local name=$1 l
  shift
  l=$(run_each "$N_QUERY" "$@") || die "$* failed"
  emit "$name" "$(median <<<"$l")" ms
}
log "(e) squeue and sinfo with $N_HOLD held jobs"
query "(e) squeue with $N_HOLD held jobs, median of $N_QUERY" squeue
query "(e) sinfo with $N_HOLD held jobs, median of $N_QUERY" sinfo
emit_rss "(f) controller RSS, $N_HOLD held jobs" "$(ctld_pid)"
emit_rss "(f) node daemon RSS, $N_HOLD held jobs${NODED_NAME:+ ($NODED_NAME)}" "$(noded_pid)"

log "(e) scancel -u $USER_NAME -t PENDING, until the queue is empty"
a=$EPOCHREALTIME
# Not q's minute: cancelling thousands of jobs may take longer than one
# query. A scancel that gives up before the queue is empty (hpc's stops at its
# own 60 s deadline) is run again, as a user would; the time counts until the
# queue is empty, and the runs it took are a figure of their own.
runs=0
while :; do
  runs=$((runs + 1))
  rc=0
  timeout "$TIMEOUT" scancel -u "$USER_NAME" -t PENDING 2>"$workdir/scancel.err" || rc=$?
  [[ -z $(queue_ids -t PD 2>/dev/null) ]] && break
  ((rc != 0)) || break   # it succeeded: what is left is leaving the queue
  ((runs < 10)) || die "scancel -u $USER_NAME -t PENDING still leaves jobs after $runs runs: $(tail -1 "$workdir/scancel.err")"
  log "scancel exited $rc with $(queue_ids -t PD | wc -l) jobs still pending ($(grep -c . "$workdir/scancel.err") error lines, the last: $(tail -1 "$workdir/scancel.err")); running it again"
done
wait_until "the cancelled jobs to leave the queue" queue_empty
b=$EPOCHREALTIME
emit "(e) scancel -u USER -t PENDING of $N_HOLD, until empty" "$(fmt "$b - $a" 2)" s
emit "(e) scancel runs it took" "$runs" runs
idle

log "done; summary (jobs/s: higher is better; ms, s, MiB: lower is better):"
cat "$summary" >&2
