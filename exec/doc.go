// Package exec is the node agent's executor: it runs a job step (the batch
// script, or srun's tasks) as the submitting user and reports how it ended.
// When the daemon is root and cgroups are usable, each step runs in its own
// libcontainer container (new mount, pid, uts and ipc namespaces, the host's
// network, the host's file system seen through a per-node prepared bind of /,
// a fresh /proc, a read-only /sys, a minimal /dev) inside the cgroup
// <parent>/<node>/<step> with memory, CPU-quota and pids limits, its
// libcontainer state under /run/hpc/<node>; otherwise steps
// are plain processes in their own process group. The parent is /hpc at
// the root of the tree on cgroup v1 and on v2 without systemd; on v2 with
// systemd as PID 1 it is a unit delegated to the daemon (its own service
// with Delegate=yes, or a transient scope it asks systemd for over D-Bus),
// with the daemon moved into the unit's leaf <unit>/daemon
// (cgroupsetup.go). Mode says which. It opens output files with
// the user's file-system identity, delivers signals to every process of a
// step, detects OOM kills from the cgroup's oom_kill counter, and cleans up
// the container, its cgroup and its processes before Wait returns.
//
// A step is one process (a batch script) or several tasks (srun's), each
// a process of its own in the step's container (the way runc exec adds
// one), with their output delivered through pipes as it comes.
//
// Programs that use this package must call InitIfChild first thing in main
// (and in TestMain): libcontainer re-executes the binary as "<exe> init", so
// no command of the program may be named "init". The package imports only the
// standard library, golang.org/x/sys/unix, runc's libcontainer (with nsenter,
// which needs cgo), github.com/opencontainers/cgroups and go-systemd's D-Bus
// client (with godbus, which it is built on); never other hpc packages. It
// is Linux-only.
package exec
