#!/usr/bin/env bash
# A lab whose nodes each have a network namespace of their own, and its
# faults by hand, as the Go harness (internal/faultnet) does them in tests.
# Run as root.
#
#   scripts/faultnet.sh up N           N nodes (config.Lab's: node1-3 controllers), node<i> on 10.$NET.0.<i>
#   scripts/faultnet.sh kill9 NODE     kill -9 NODE's daemon
#   scripts/faultnet.sh start NODE     start NODE's daemon again in its namespace
#   scripts/faultnet.sh freeze NODE    SIGSTOP NODE's daemon;  thaw NODE: SIGCONT
#   scripts/faultnet.sh cut NODE       NODE's link down (on the hub's side);  restore NODE: up
#   scripts/faultnet.sh partition NODE...   these nodes reach one another, not the rest;  heal: undo
#   scripts/faultnet.sh down           stop the lab, remove its namespaces (the lab directory stays)
#
# Environment: HPC (the hpc binary, default: hpc on PATH), HPC_DIR (the lab
# directory, default /tmp/hpc-faultnet), FN_PREFIX (namespace names,
# default hpcfn), NET (default 60). Commands reach a node through its
# socket, whatever its network: HPC_DIR=$HPC_DIR HPC_SOCKET=$HPC_DIR/node2/hpc.sock sinfo
#
# The namespaces are named ones (ip netns list); note that while a lab of
# this machine runs steps, their roots copy /run/netns and ip netns del can
# fail (busy) until those steps end: run down again then.
set -euo pipefail
HPC=${HPC:-$(command -v hpc || true)}
DIR=${HPC_DIR:-/tmp/hpc-faultnet}
P=${FN_PREFIX:-hpcfn}
NET=${NET:-60}
HUB=${P}_hub

die() { echo "faultnet.sh: $*" >&2; exit 1; }
index() { [[ $1 =~ ^node([0-9]+)$ ]] || die "not a node name: $1"; echo "${BASH_REMATCH[1]}"; }
pidof_node() { cat "$DIR/$1/hpc.pid" 2>/dev/null || die "$1 has no pid file"; }

start() {
	local n=$1
	mkdir -p "$DIR/$n"
	# As hpc up starts a daemon: its own session, its log appended. nsenter
	# rather than ip netns exec, which remounts /sys (the daemon's cgroups
	# live there); nsenter and setsid exec in place, so $! is the daemon.
	nsenter --net="/run/netns/${P}_$n" setsid "$HPC" daemon --name "$n" --dir "$DIR" \
		>>"$DIR/$n/hpc.log" 2>&1 </dev/null &
	echo $! >"$DIR/$n/hpc.pid"
}

up() {
	local n=${1:?up N} i conf
	[[ -x $HPC ]] || die "no hpc binary (set HPC)"
	ip netns add "$HUB"
	ip -n "$HUB" link add br0 type bridge
	ip -n "$HUB" link add br1 type bridge
	ip -n "$HUB" link set br0 up
	ip -n "$HUB" link set br1 up
	for ((i = 1; i <= n; i++)); do
		ip netns add "${P}_node$i"
		ip -n "$HUB" link add "v$i" type veth peer name eth0 netns "${P}_node$i"
		ip -n "$HUB" link set "v$i" master br0 up
		ip -n "${P}_node$i" addr add "10.$NET.0.$i/24" dev eth0
		ip -n "${P}_node$i" link set eth0 up
		ip -n "${P}_node$i" link set lo up
	done
	mkdir -p "$DIR"
	# A small lab config of its own (hpc up --nodes N's, less the GPUs and
	# comments) at the namespaces' addresses; the standard ports.
	conf=$DIR/slurm.conf
	cat >"$conf" <<EOF
ClusterName=lab
$(for ((i = 1; i <= n && i <= 3; i++)); do echo "SlurmctldHost=node$i(10.$NET.0.$i)"; done)
SlurmdTimeout=10
NodeName=DEFAULT Sockets=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=4000
$(for ((i = 1; i <= n; i++)); do echo "NodeName=node$i NodeAddr=10.$NET.0.$i"; done)
PartitionName=debug Nodes=node[1-$n] Default=YES MaxTime=1-00:00:00 State=UP
EOF
	[[ -s $DIR/cluster.key ]] || (umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$DIR/cluster.key" && echo >>"$DIR/cluster.key")
	mkdir -p "$DIR/home" "$DIR/project" "$DIR/scratch"
	chmod 1777 "$DIR/scratch"
	for ((i = 1; i <= n; i++)); do start "node$i"; done
	echo "lab in $DIR: export HPC_DIR=$DIR; hpc status"
}

down() {
	[[ -x $HPC ]] && "$HPC" down --dir "$DIR" || true
	local ns
	for ns in $(ip netns list | awk '{print $1}' | grep "^${P}_" || true); do
		ip netns pids "$ns" | xargs -r kill -9
		ip netns del "$ns"
	done
}

[[ $EUID -eq 0 ]] || die "run as root"
cmd=${1:-}
shift || true
case $cmd in
up) up "$@" ;;
down) down ;;
start) index "${1:?NODE}" >/dev/null && start "$1" ;;
kill9) kill -9 "$(pidof_node "${1:?NODE}")" ;;
freeze) kill -STOP "$(pidof_node "${1:?NODE}")" ;;
thaw) kill -CONT "$(pidof_node "${1:?NODE}")" ;;
cut) ip -n "$HUB" link set "v$(index "${1:?NODE}")" down ;;
restore) ip -n "$HUB" link set "v$(index "${1:?NODE}")" up ;;
partition)
	[[ $# -gt 0 ]] || die "partition NODE..."
	for n in "$@"; do ip -n "$HUB" link set "v$(index "$n")" master br1; done
	;;
heal)
	for l in $(ip -n "$HUB" -o link show master br1 | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip -n "$HUB" link set "$l" master br0
	done
	;;
*) sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
