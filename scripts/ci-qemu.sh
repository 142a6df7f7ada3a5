#!/usr/bin/env bash
# What TestQemuCgroupV2 (e2e/qemu_test.go) needs on a fresh Debian machine,
# as root: qemu, cpio and busybox-static from Debian's packages (only those
# missing), then Debian's kernel and busybox-static fetched into the cache
# scripts/qemu-cgroup2.sh reads (~/.cache/hpc-qemu), so the test finds
# them and a failing download fails here, by name, rather than in a skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v cpio >/dev/null || need+=(cpio)
command -v gzip >/dev/null || need+=(gzip)
command -v dpkg-deb >/dev/null || need+=(dpkg)
if ((${#need[@]})); then
	apt-get update -qq
	# Without recommends: the emulator and its firmware, no desktop stack.
	apt-get install -y -qq --no-install-recommends "${need[@]}"
elif ! apt-cache show --no-all-versions linux-image-cloud-amd64 >/dev/null 2>&1; then
	apt-get update -qq
fi
qemu-system-x86_64 --version | head -n1
scripts/qemu-cgroup2.sh --fetch
