#!/usr/bin/env bash
# Writes testdata/man-options/<command>.txt: the options Slurm 22.05.8's man
# pages document for the commands hpc implements, one per line: its names
# and "=" when it takes an argument, "[=]" when the argument is optional
# ("-A --account =", "--hold"); a command's option list, not its text.
# commands' TestManPageOptions checks every one is accepted.
#
#   scripts/man-options.sh [SLURM_SRC]
#
# SLURM_SRC is a Slurm 22.05.8 source tree; by default the man pages are
# taken from Debian's source package (the same tarball scripts/slurm-suite.sh
# fetches into $HPC_SUITE_CACHE, default ~/.cache/hpc-slurm-suite).
set -euo pipefail
cd "$(dirname "$0")/.."
out=testdata/man-options
src=${1:-}
if [[ -z $src ]]; then
  cache=${HPC_SUITE_CACHE:-$HOME/.cache/hpc-slurm-suite}
  tarball=$cache/slurm-wlm_22.05.8.orig.tar.gz
  if [[ ! -s $tarball ]]; then
    mkdir -p "$cache"
    curl -fsSL --retry 3 -o "$tarball.part" http://deb.debian.org/debian/pool/main/s/slurm-wlm/slurm-wlm_22.05.8.orig.tar.gz
    mv "$tarball.part" "$tarball"
  fi
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  tar -xzf "$tarball" -C "$src" --strip-components=1 --wildcards '*/doc/man/man1/*'
fi
mkdir -p "$out"
for cmd in sbatch srun salloc squeue sinfo sacct scontrol scancel sattach sbcast sstat strigger sdiag sprio sshare sreport sacctmgr; do
  page=$src/doc/man/man1/$cmd.1
  [[ -f $page ]] || { echo "no man page for $cmd in $src" >&2; exit 1; }
  # An option's entry is a .TP paragraph whose tag line starts with a dash
  # in bold (\fB or \f3): \fB\-A\fR, \fB\-\-account\fR=<...>. Keep its -X and
  # --name words.
  awk '
    /^\.TP/ { tag = 1; next }
    tag == 1 {
      tag = 0
      line = $0
      if (line !~ /^\\f[B3]\\-/) next
      gsub(/\\-/, "-", line)
      gsub(/\\f[BIRP3]/, "", line)
      # What follows the last name: "=<" an argument, "[=" an optional one.
      arg = ""
      if (match(line, /^(-[A-Za-z0-9], )?--?[A-Za-z0-9][A-Za-z0-9_-]*/)) {
        rest = substr(line, RLENGTH + 1)
        if (rest ~ /^\[=/) arg = "[=]"
        else if (rest ~ /^[= ]<|^=[^ ]/) arg = "="
        else if (rest ~ /^ </) arg = "="
      }
      words = ""
      n = split(line, parts, /[ ,=<[]+/)
      for (i = 1; i <= n; i++) {
        p = parts[i]
        if (p ~ /^--[A-Za-z][A-Za-z0-9_-]*$/ || p ~ /^-[A-Za-z0-9]$/) {
          if (index(" " words " ", " " p " ") == 0) words = words (words == "" ? "" : " ") p
        }
      }
      if (words != "") print words (arg == "" ? "" : " " arg)
    }
  ' "$page" | sort -u > "$out/$cmd.txt"
  echo "$cmd: $(wc -l < "$out/$cmd.txt") options"
done
