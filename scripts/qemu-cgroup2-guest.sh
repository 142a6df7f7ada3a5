#!/bin/sh
# The /init of the virtual machine scripts/qemu-cgroup2.sh boots: it proves
# hpc's cgroup v2 path on a real distribution kernel. It prints one line per
# check on the console,
#
#   HPC-CHECK <name> PASS|FAIL <detail>
#
# then HPC-CHECKS-END, and powers the machine off. The host script knows the
# names and fails on a FAIL or a missing line. Everything here is busybox
# and the hpc binary; a job's state is polled with a deadline, never waited
# for by a fixed sleep.

PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
export PATH

# Stage 1. The kernel unpacked the initramfs into rootfs, which pivot_root
# cannot leave, and libcontainer enters every container with pivot_root:
# copy the tree into a tmpfs and make that the root.
if [ ! -e /.stage2 ]; then
	mount -t devtmpfs devtmpfs /dev 2>/dev/null
	exec </dev/console >/dev/console 2>&1
	mkdir -p /newroot
	mount -t tmpfs -o mode=0755 tmpfs /newroot
	for f in /* /.[!.]*; do
		case $f in /newroot | /proc | /sys | /dev | '/.[!.]*') continue ;; esac
		cp -a "$f" /newroot/
	done
	mkdir -p /newroot/proc /newroot/sys /newroot/dev
	: >/newroot/.stage2
	umount -l /dev
	exec switch_root /newroot /init
fi

# Stage 2: the machine as a node of a lab.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /run /tmp
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
chmod 1777 /tmp
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
exec </dev/console >/dev/console 2>&1

ip link set lo up
hostname qemu
hpc install-links /usr/local/bin >/dev/null

cat >/etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
alice:x:1000:1000:alice:/home/alice:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >/etc/group <<'EOF'
root:x:0:
alice:x:1000:
nogroup:x:65534:
EOF
printf 'passwd: files\ngroup: files\nshadow: files\n' >/etc/nsswitch.conf
mkdir -p /root /home/alice
chown 1000:1000 /home/alice
chmod 0755 /home/alice

HPC_DIR=/lab
export HPC_DIR

failed=0

now() { cut -d' ' -f1 /proc/uptime; }

# check NAME PASS|FAIL DETAIL...: one result line.
check() {
	name=$1 res=$2
	shift 2
	echo "HPC-CHECK $name $res $* (at $(now) s)"
	[ "$res" = PASS ] || failed=1
}

# as USER CMD: CMD (a shell line) as USER in USER's home.
as() {
	if [ "$1" = root ]; then
		(cd /root && sh -c "$2")
	else
		su -s /bin/sh "$1" -c "cd && $2"
	fi
}

# submit USER SBATCH-ARGS...: the job's id.
submit() {
	user=$1
	shift
	as "$user" "sbatch --parsable $*"
}

# wait_end ID [SECONDS]: the job's state once it has ended (sacct), or
# WAIT-TIMEOUT(<last state>) after SECONDS.
wait_end() {
	deadline=$(($(now | cut -d. -f1) + ${2:-120}))
	while :; do
		st=$(sacct -j "$1" -X -n -P -o State 2>/dev/null | head -n1)
		case $st in
		COMPLETED | FAILED | OUT_OF_MEMORY | CANCELLED* | TIMEOUT | NODE_FAIL | PREEMPTED | BOOT_FAIL | DEADLINE)
			echo "$st"
			return
			;;
		esac
		if [ "$(now | cut -d. -f1)" -ge "$deadline" ]; then
			echo "WAIT-TIMEOUT($st)"
			return
		fi
		# Each look starts sacct, a Go program: dear under TCG.
		sleep 0.5
	done
}

# batch_maxrss ID: the batch step's MaxRSS in KiB (sacct prints 40956K).
batch_maxrss() {
	sacct -j "$1" -n -P -o JobID,MaxRSS | awk -F'|' -v id="$1.batch" '
		$1 == id { v = $2; m = 1
			if (v ~ /K$/) m = 1; else if (v ~ /M$/) m = 1024; else if (v ~ /G$/) m = 1048576; else m = 1 / 1024
			sub(/[KMG]$/, "", v); printf "%d\n", v * m }'
}

# oneline FILE: a file's lines joined by ';' for a result line.
oneline() { tr '\n' ';' <"$1" | sed 's/;$//'; }

# no_cgroups WHEN: nothing of hpc's is left in the cgroup tree.
no_cgroups() {
	left=$(find /sys/fs/cgroup -mindepth 1 -type d 2>/dev/null | grep -c hpc)
	if [ "$left" = 0 ]; then
		check "$1" PASS "no cgroup under /sys/fs/cgroup/hpc after hpc down; /run/hpc: $(ls /run/hpc 2>/dev/null | wc -l) entries"
	else
		check "$1" FAIL "$left cgroup(s) left: $(find /sys/fs/cgroup -mindepth 1 -type d | grep hpc | tr '\n' ' ')"
	fi
}

dump_log() {
	echo "--- hpc.log of node1 (last 60 lines):"
	tail -n 60 "$HPC_DIR/node1/hpc.log" 2>/dev/null
	echo "---"
}

echo "HPC-GUEST kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo), up $(now) s"

# The cgroup v2 tree the kernel gives, with the controllers hpc's limits
# need.
ctl=$(cat /sys/fs/cgroup/cgroup.controllers)
fs=$(awk '$2 == "/sys/fs/cgroup" {print $3}' /proc/mounts)
missing=
for c in memory cpu pids cpuset; do
	case " $ctl " in *" $c "*) ;; *) missing="$missing $c" ;; esac
done
if [ "$fs" = cgroup2 ] && [ -z "$missing" ]; then
	check cgroup2 PASS "cgroup2 on /sys/fs/cgroup, controllers: $ctl"
else
	check cgroup2 FAIL "$fs on /sys/fs/cgroup, controllers: $ctl; missing:$missing"
fi

t0=$(now)
if up=$(hpc up --nodes 1 2>&1) && st=$(hpc status 2>&1) && echo "$st" | grep -q 'containers (libcontainer, cgroup v2'; then
	check up PASS "hpc up --nodes 1 in $(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}') s; status: $(echo "$st" | grep -o 'containers (libcontainer, cgroup v2[^)]*)' | head -n1)"
	sacctmgr -i add user alice account=root >/tmp/sacctmgr.out 2>&1 || cat /tmp/sacctmgr.out
else
	check up FAIL "$(echo "$up" "$st" | tr '\n' ';')"
	dump_log
	echo HPC-CHECKS-END
	poweroff -f
fi

# A job as root and as alice: in a container, in the job's cgroup under
# hpc's tree, as the submitting user.
cat >/tmp/who.sh <<'EOF'
#!/bin/sh
echo "uid=$(id -u)"
echo "cgroup=$(cat /proc/self/cgroup)"
echo "pid1=$(cat /proc/1/cmdline | tr '\0' ' ')"
EOF
chmod 0755 /tmp/who.sh
for c in "root-container root 0" "alice-container alice 1000"; do
	set -- $c
	user=$2 want=$3
	out=/tmp/who-$user.out
	id=$(submit "$user" -o "$out" /tmp/who.sh)
	state=$(wait_end "$id")
	cg=$(sed -n 's/^cgroup=0:://p' "$out" 2>/dev/null)
	uid=$(sed -n 's/^uid=//p' "$out" 2>/dev/null)
	case $cg in
	/hpc/node1-*/job_"$id"/*) incg=yes ;;
	*) incg=no ;;
	esac
	owner=$(stat -c %u "$out" 2>/dev/null)
	if [ "$state" = COMPLETED ] && [ "$uid" = "$want" ] && [ "$incg" = yes ] && [ "$owner" = "$want" ]; then
		check "$1" PASS "job $id $state uid=$uid cgroup=$cg output owned by $owner"
	else
		check "$1" FAIL "job $id $state; want uid $want in /hpc/node1-*/job_$id/: $(oneline "$out" 2>/dev/null) owner=$owner"
	fi
done

# --mem=40M, and a program that wants 200 MiB: the kernel's OOM killer ends
# it inside the step's cgroup, and the job ends OUT_OF_MEMORY.
cat >/tmp/oom.sh <<'EOF'
#!/bin/sh
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
echo "memory.max=$(cat "$cg/memory.max") swap.max=$(cat "$cg/memory.swap.max" 2>/dev/null)"
dd if=/dev/zero of=/dev/null bs=200M count=1 && echo "dd survived"
EOF
chmod 0755 /tmp/oom.sh
id=$(submit alice --mem=40M -o /tmp/oom.out /tmp/oom.sh)
state=$(wait_end "$id")
rss=$(batch_maxrss "$id")
if [ "$state" = OUT_OF_MEMORY ] && grep -q '^memory.max=41943040 ' /tmp/oom.out && ! grep -q survived /tmp/oom.out; then
	check oom PASS "job $id $state MaxRSS=${rss}K $(head -n1 /tmp/oom.out)"
else
	check oom FAIL "job $id $state MaxRSS=${rss}K: $(oneline /tmp/oom.out)"
fi

# sacct's MaxRSS is the step cgroup's memory.peak: a job that fills a 64 MiB
# buffer used at least that much, and not much more.
id=$(submit alice -o /tmp/rss.out --wrap "'dd if=/dev/zero of=/dev/null bs=64M count=1'")
state=$(wait_end "$id")
rss=$(batch_maxrss "$id")
if [ "$state" = COMPLETED ] && [ -n "$rss" ] && [ "$rss" -ge 65536 ] && [ "$rss" -le 106496 ]; then
	check maxrss PASS "job $id $state MaxRSS=${rss}K for a 64 MiB buffer (65536K-106496K)"
else
	check maxrss FAIL "job $id $state MaxRSS=${rss}K, want 65536K-106496K: $(oneline /tmp/rss.out)"
fi

# Two busy loops for 5 s. A 1-CPU job (cpu.max one period's worth, one CPU
# in its cpuset) gets at most one CPU's worth of CPU time over the wall
# time and leaves the other CPU idle for much of it (the lab's daemons and
# sacct polling for the job's end use some: under TCG up to half a CPU); a
# 2-CPU job keeps both CPUs busy.
# Busy is read per CPU (/proc/stat: 1 - idle over all its time), not as CPU
# time over wall time: under TCG a vCPU runs only as often as the host
# gives its thread a core, which would make the measure the host's load as
# much as the job's limit.
cat >/tmp/spin.sh <<'EOF'
#!/bin/sh
cg=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
usage() { awk '$1 == "usage_usec" {print $2}' "$cg/cpu.stat"; }
grep '^cpu[0-9]' /proc/stat >/tmp/stat0.$$
t0=$(cut -d' ' -f1 /proc/uptime) u0=$(usage)
timeout 5 sh -c 'while :; do :; done' &
timeout 5 sh -c 'while :; do :; done' &
wait
t1=$(cut -d' ' -f1 /proc/uptime) u1=$(usage)
busy=$(grep '^cpu[0-9]' /proc/stat | awk 'NR == FNR {for (i = 2; i <= 9; i++) a[$1, i] = $i; next}
	{t = 0; for (i = 2; i <= 9; i++) t += $i - a[$1, i]; b = t ? 1 - ($5 - a[$1, 5] + $6 - a[$1, 6]) / t : 0
	 printf "%s%.2f", (FNR > 1 ? "," : ""), b; if (FNR == 1 || b < min) min = b}
	END {printf " minbusy=%.2f", min}' /tmp/stat0.$$ -)
rm -f /tmp/stat0.$$
echo "cpu.max=$(tr ' ' / <"$cg/cpu.max") cpuset=$(cat "$cg/cpuset.cpus.effective") busy=$busy" \
	"$(awk -v t0="$t0" -v t1="$t1" -v u="$((u1 - u0))" 'BEGIN {printf "cpu/wall=%.2f", u / 1e6 / (t1 - t0)}')"
EOF
chmod 0755 /tmp/spin.sh
# name, CPUs, cpu.max, then the bounds: minbusy and cpu/wall, low and high.
for c in "cpu-quota 1 100000/100000 0 0.85 0.4 1.1" "cpu-two 2 200000/100000 0.9 1 0.4 2.1"; do
	set -- $c
	id=$(submit alice -c "$2" -o "/tmp/spin$2.out" /tmp/spin.sh)
	state=$(wait_end "$id")
	line=$(cat "/tmp/spin$2.out" 2>/dev/null)
	minbusy=$(echo "$line" | sed -n 's/.*minbusy=\([0-9.]*\).*/\1/p')
	ratio=$(echo "$line" | sed -n 's/.*cpu\/wall=//p')
	want="cpu.max=$3, the least busy CPU $4-$5, cpu/wall $6-$7"
	if [ "$state" = COMPLETED ] && echo "$line" | grep -q "cpu.max=$3 " &&
		awk -v b="$minbusy" -v r="$ratio" -v b0="$4" -v b1="$5" -v r0="$6" -v r1="$7" \
			'BEGIN {exit !(b != "" && r != "" && b >= b0 && b <= b1 && r >= r0 && r <= r1)}'; then
		check "$1" PASS "job $id -c $2: $line (want $want)"
	else
		check "$1" FAIL "job $id -c $2 $state: $line (want $want)"
	fi
done

hpc down >/dev/null 2>&1
no_cgroups no-cgroup-left

# Fake GPUs with device numbers of drivers that open without a device
# behind them (tun and fuse, as the lab tests borrow), named in gres.conf.
# A --gres=gpu:1 job opens its own and is refused the other: its /dev has
# no node for it, and the cgroup's device rule (a BPF program on cgroup v2)
# refuses even the node root makes for it, while it lets root make one for
# its own.
insmod /lib/modules/tun.ko 2>/dev/null
insmod /lib/modules/fuse.ko 2>/dev/null
devnum() { printf '%d %d' "0x$(stat -c %t "$1")" "0x$(stat -c %T "$1")"; }
if [ -c /dev/net/tun ] && [ -c /dev/fuse ]; then
	n0=$(devnum /dev/net/tun) n1=$(devnum /dev/fuse)
	mknod -m 0600 /dev/hpcgpu0 c $n0
	mknod -m 0600 /dev/hpcgpu1 c $n1
	echo 'NodeName=node1 Name=gpu File=/dev/hpcgpu[0-1]' >"$HPC_DIR/gres.conf"
	cat >/tmp/gpu.sh <<EOF
#!/bin/sh
echo CUDA=\$CUDA_VISIBLE_DEVICES
(exec 3</dev/hpcgpu0) 2>/dev/null && echo gpu0 opened || echo gpu0 refused
(exec 4</dev/hpcgpu1) 2>/dev/null && echo gpu1 opened || echo gpu1 refused
mknod /dev/own c $n0 2>/dev/null && (exec 3</dev/own) 2>/dev/null && echo own node opened || echo own node refused
mknod /dev/other c $n1 2>/dev/null && echo other node made || echo other node refused
EOF
	chmod 0755 /tmp/gpu.sh
	if hpc up >/dev/null 2>&1; then
		id=$(submit root --gres=gpu:1 -o /tmp/gpu.out /tmp/gpu.sh)
		state=$(wait_end "$id")
		want='CUDA=0;gpu0 opened;gpu1 refused;own node opened;other node refused'
		got=$(oneline /tmp/gpu.out 2>/dev/null)
		if [ "$state" = COMPLETED ] && [ "$got" = "$want" ]; then
			check gpu-devices PASS "job $id --gres=gpu:1 ($n0 and $n1): $got"
		else
			check gpu-devices FAIL "job $id $state: got '$got', want '$want'"
		fi
	else
		check gpu-devices FAIL "hpc up with gres.conf failed"
	fi
	hpc down >/dev/null 2>&1
else
	check gpu-devices FAIL "no /dev/net/tun or /dev/fuse to borrow device numbers from (tun.ko, fuse.ko)"
fi
no_cgroups no-cgroup-left-gpu

# The same binary, unprivileged: alice's own lab runs her jobs as plain
# processes of hers (no containers, no cgroup limits without root), and
# hpc status says so.
alab="HPC_DIR=/home/alice/lab"
if as alice "$alab hpc up --nodes 1 >/tmp/alice-up.out 2>&1"; then
	steps=$(as alice "$alab hpc status" 2>&1 | grep '^Steps:')
	id=$(as alice "$alab sbatch --parsable --wrap 'id -u'")
	deadline=$(($(now | cut -d. -f1) + 120))
	st=
	while [ "$(now | cut -d. -f1)" -lt "$deadline" ]; do
		st=$(as alice "$alab sacct -j $id -X -n -P -o State" 2>/dev/null | head -n1)
		case $st in COMPLETED | FAILED | CANCELLED* | NODE_FAIL) break ;; esac
		sleep 0.5
	done
	out=$(cat "/home/alice/slurm-$id.out" 2>/dev/null)
	case $steps in
	*"plain processes"*)
		if [ "$st" = COMPLETED ] && [ "$out" = 1000 ]; then
			check unprivileged PASS "job $id $st as uid $out; $steps"
		else
			check unprivileged FAIL "job $id $st output '$out'; $steps"
		fi
		;;
	*) check unprivileged FAIL "status does not say plain processes: '$steps'" ;;
	esac
	as alice "$alab hpc down" >/dev/null 2>&1
else
	check unprivileged FAIL "hpc up as alice: $(tail -n 3 /tmp/alice-up.out | tr '\n' ';')"
fi

[ "$failed" = 0 ] || dump_log
echo "HPC-GUEST done at $(now) s"
echo HPC-CHECKS-END
poweroff -f
