#!/usr/bin/env bash
# Proves hpc's cgroup v2 path on the kernel most machines have: boots
# Debian's kernel under qemu (KVM where /dev/kvm works, else TCG) from an
# initramfs holding the hpc binary, its shared libraries, busybox and
# scripts/qemu-cgroup2-guest.sh as /init, which starts a lab and runs the
# checks (jobs in containers as root and as a user, OOM, MaxRSS, the CPU
# quota, the device rule of a fake GPU, no cgroup left behind). The console
# is printed; the exit status is 0 when every check printed PASS, 1 when one
# failed or is missing, and 77 when qemu or the kernel cannot be had.
#
#   scripts/qemu-cgroup2.sh            build bin/hpc, boot, check
#   scripts/qemu-cgroup2.sh --fetch    only fill the package cache
#
# Environment:
#   HPC_BIN            the hpc binary to test (default: go build -o bin/hpc .)
#   HPC_QEMU_CACHE     package cache (default ~/.cache/hpc-qemu); reused offline
#   HPC_QEMU_KERNEL    the kernel package (default linux-image-cloud-amd64)
#   HPC_QEMU_ACCEL     kvm or tcg (default: kvm when /dev/kvm opens)
#   HPC_QEMU_TIMEOUT   seconds the machine may run (default 240)
#   HPC_QEMU_CONSOLE   also write the console to this file
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${HPC_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hpc-qemu}
kpkg=${HPC_QEMU_KERNEL:-linux-image-cloud-amd64}
vm_timeout=${HPC_QEMU_TIMEOUT:-240}
SKIP=77

# The checks the guest reports, in its order.
checks=(cgroup2 up root-container alice-container oom maxrss cpu-quota cpu-two no-cgroup-left gpu-devices no-cgroup-left-gpu unprivileged)

say() { echo "qemu-cgroup2: $*" >&2; }

# download PKG: the newest cached .deb of PKG, fetched from the archive when
# it can be (apt-get download writes into the cache) and reused offline.
download() {
	local pkg=$1
	mkdir -p "$cache"
	(cd "$cache" && apt-get download -q "$pkg" >/dev/null 2>&1) || say "cannot download $pkg; using the cache"
	# shellcheck disable=SC2012 # file names of Debian packages: no odd characters
	ls "$cache/${pkg}"_*.deb 2>/dev/null | sort -V | tail -n1
}

# kernel_deb: the image package the kernel metapackage depends on.
kernel_deb() {
	local meta image
	meta=$(download "$kpkg")
	if [[ -n $meta ]]; then
		image=$(dpkg-deb -f "$meta" Depends | tr ',' '\n' | sed -n 's/^ *\(linux-image-[^ ]*\).*/\1/p' | head -n1)
	else
		# Offline with no metapackage cached: the newest image package.
		# shellcheck disable=SC2012
		image=$(ls "$cache" 2>/dev/null | sed -n 's/^\(linux-image-[0-9][^_]*\)_.*\.deb$/\1/p' | sort -V | tail -n1)
	fi
	[[ -n $image ]] || return 0
	download "$image"
}

# fetch: sets kdir (vmlinuz and the modules the guest loads) and busybox,
# extracting each package once into the cache.
fetch() {
	local deb
	deb=$(kernel_deb)
	if [[ -z $deb ]]; then
		say "no kernel package ($kpkg) in $cache and none to download"
		exit $SKIP
	fi
	kdir=$cache/x/$(basename "$deb" .deb)
	if [[ ! -e $kdir/ok ]]; then
		rm -rf "$kdir"
		mkdir -p "$kdir"
		local x=$kdir/pkg
		dpkg-deb -x "$deb" "$x"
		cp "$x"/boot/vmlinuz-* "$kdir/vmlinuz"
		find "$x/lib/modules" \( -name tun.ko -o -name fuse.ko \) -exec cp {} "$kdir/" \;
		rm -rf "$x"
		touch "$kdir/ok"
	fi
	deb=$(download busybox-static)
	busybox=
	if [[ -n $deb ]]; then
		busybox=$cache/x/$(basename "$deb" .deb)
		if [[ ! -e $busybox ]]; then
			local x=$cache/x/bb.$$
			dpkg-deb -x "$deb" "$x"
			mv "$x/bin/busybox" "$busybox"
			rm -rf "$x"
		fi
	elif [[ -x /bin/busybox ]] && ! ldd /bin/busybox >/dev/null 2>&1; then
		busybox=/bin/busybox # a static one
	fi
	if [[ -z $busybox ]]; then
		say "no static busybox (busybox-static) in $cache and none to download"
		exit $SKIP
	fi
	say "kernel $(basename "$kdir"), busybox $busybox"
}

# initramfs OUT: the guest's root file system as a gzipped newc cpio.
initramfs() {
	local out=$1 rd=$work/root
	mkdir -p "$rd"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,proc,sys,dev,tmp,run,root,home,lib/modules}
	cp "$busybox" "$rd/bin/busybox"
	local applet
	for applet in $("$rd/bin/busybox" --list-full); do
		[[ -e $rd/$applet || -L $rd/$applet ]] || ln -s /bin/busybox "$rd/$applet"
	done
	cp "$hpc" "$rd/usr/local/bin/hpc"
	# The binary's shared libraries (cgo: libc and the loader), at the
	# paths the binary names them.
	local lib
	for lib in $(ldd "$hpc" | grep -o '/[^ ]*'); do
		mkdir -p "$rd$(dirname "$lib")"
		cp -L "$lib" "$rd$lib"
	done
	cp "$kdir"/*.ko "$rd/lib/modules/" 2>/dev/null || true
	cp "$root/scripts/qemu-cgroup2-guest.sh" "$rd/init"
	chmod 0755 "$rd/init"
	(cd "$rd" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$out"
}

# kvm_works: /dev/kvm opens and a KVM guest gets going. An opening
# /dev/kvm is not enough: under some nested hypervisors a KVM guest never
# runs an instruction. The kernel alone, without an initramfs, panics at
# once for want of a root file system; under KVM that takes a second.
kvm_works() {
	[[ -c /dev/kvm ]] && (exec 3<>/dev/kvm) 2>/dev/null || return 1
	local out
	out=$(timeout -k 2 10 qemu-system-x86_64 -accel kvm -cpu host -m 256 \
		-nodefaults -no-user-config -display none -serial stdio -no-reboot \
		-kernel "$kdir/vmlinuz" -append "console=ttyS0 panic=-1" </dev/null 2>/dev/null || true)
	[[ $out == *"Kernel panic"* ]]
}

# boot: runs the machine and prints its console (also into console).
boot() {
	local accel=${HPC_QEMU_ACCEL:-}
	if [[ -z $accel ]]; then
		accel=tcg
		if kvm_works; then accel=kvm; fi
	fi
	# Multi-threaded TCG: each vCPU a host thread of its own, so that the
	# guest's two CPUs run at once, as the CPU checks need.
	local cpu=max
	if [[ $accel == kvm ]]; then cpu=host; else accel=tcg,thread=multi; fi
	say "booting under $accel (timeout ${vm_timeout}s)"
	# The console is ttyS0 (the cloud kernel has the 8250 driver built in,
	# virtio's console only as a module); panic=-1 and -no-reboot turn a
	# dead /init into a prompt exit instead of a hang. tsc=reliable: TCG's
	# vCPUs fail the kernel's TSC sync test, and the HPET it falls back to
	# costs an emulated device read at every clock read.
	timeout -k 5 "$vm_timeout" qemu-system-x86_64 \
		-accel "$accel" -cpu "$cpu" -smp 2 -m 1024 \
		-nodefaults -no-user-config -display none -serial stdio -no-reboot \
		-kernel "$kdir/vmlinuz" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet tsc=reliable" </dev/null | tr -d '\r' | tee "$console"
}

# verdict: 0 when every check printed PASS.
verdict() {
	local status=0 name line
	echo
	echo "qemu-cgroup2 results:"
	for name in "${checks[@]}"; do
		line=$(grep -a -m1 "^HPC-CHECK $name " "$console" || true)
		if [[ -z $line ]]; then
			echo "  $name MISSING"
			status=1
		elif [[ $line != "HPC-CHECK $name PASS"* ]]; then
			echo "  ${line#HPC-CHECK }"
			status=1
		else
			echo "  ${line#HPC-CHECK }"
		fi
	done
	grep -aq '^HPC-CHECKS-END' "$console" || {
		echo "  the guest did not finish (HPC-CHECKS-END missing)"
		status=1
	}
	return $status
}

fetch
[[ ${1:-} == --fetch ]] && exit 0

if ! command -v qemu-system-x86_64 >/dev/null; then
	say "qemu-system-x86_64 is not installed (Debian: qemu-system-x86)"
	exit $SKIP
fi
for tool in cpio gzip; do
	command -v $tool >/dev/null || {
		say "$tool is not installed"
		exit $SKIP
	}
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
console=$work/console
hpc=${HPC_BIN:-}
if [[ -z $hpc ]]; then
	say "building bin/hpc"
	(cd "$root" && go build -tags "$(cat scripts/go-tags)" -o bin/hpc .)
	hpc=$root/bin/hpc
fi

start=$SECONDS
initramfs "$work/initrd.gz"
say "initramfs $(du -h "$work/initrd.gz" | cut -f1) in $((SECONDS - start))s"
start=$SECONDS
boot || true
say "the machine ran $((SECONDS - start))s"
[[ -z ${HPC_QEMU_CONSOLE:-} ]] || cp "$console" "$HPC_QEMU_CONSOLE"
verdict
