#!/usr/bin/env bash
# CI's linux/arm64 check, on an amd64 machine, as root: installs what is
# missing of the cross compiler and qemu-user from Debian's packages, then
# runs scripts/arm64.sh (cross-build, unit tests under qemu-aarch64, a
# one-node lab of the arm64 binary). Arguments go to scripts/arm64.sh
# (--no-smoke where the machine has no binfmt_misc).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH
export DEBIAN_FRONTEND=noninteractive
[ "$(id -u)" = 0 ] || { echo "ci-arm64.sh: run as root (apt-get, binfmt_misc, the lab)" >&2; exit 1; }
start=$(date +%s)
# The modules, in case this runs before anything else has fetched them.
go mod download
scripts/arm64.sh --install "$@"
echo "ci-arm64.sh: $(($(date +%s) - start))s in all"
