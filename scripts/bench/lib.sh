# Sourced by the bench scripts: how they time commands and read the
# machine's state.

# ms A B: milliseconds from EPOCHREALTIME A to B.
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) * 1000 }'; }

# median: the median of the numbers on stdin, one a line (of an even count,
# the mean of the middle two).
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; if (NR % 2) print v[(NR+1)/2]; else printf "%.1f\n", (v[NR/2] + v[NR/2+1]) / 2 }'; }

# timed N CMD...: the median wall time of N runs of CMD (its output
# discarded), ms. The shell reads the clock itself (EPOCHREALTIME), so only
# CMD is timed, not a date(1) started around it.
timed() {
  local n=$1 i a b
  shift
  for ((i = 0; i < n; i++)); do
    a=$EPOCHREALTIME
    "$@" >/dev/null
    b=$EPOCHREALTIME
    ms "$a" "$b"
    echo
  done | median
}

# cpu_ticks: the machine's busy CPU time since boot, in ticks (user, nice,
# system, irq, softirq and steal), and of it the steal: time in which a
# virtual machine had work and its host ran something else.
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $9 }' /proc/stat; }

# steal_share "BUSY STEAL" "BUSY STEAL": steal's share of the busy CPU time
# between two cpu_ticks readings, %. On a machine that is not virtual, 0.
steal_share() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); d = y[1] - x[1]; printf "%.1f", (d > 0 ? (y[2] - x[2]) * 100 / d : 0) }'
}
