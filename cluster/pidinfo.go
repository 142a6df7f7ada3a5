package cluster

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// scontrol pidinfo PID: the job a process of this node belongs to. A
// step's processes live in its job's cgroup (/hpc/<node>/job_<id>/...,
// exec/jobcgroup.go), which /proc/PID/cgroup names; steps run as plain
// processes (no cgroups) carry SLURM_JOB_ID in their environment, read
// from the process or its nearest ancestor that has it. The job's end
// time is the leader's to say: the client asks it.

// errNoJobForPid is Slurm's text when the pid is in no job.
const errNoJobForPid = "Failed to locate job for requested pid"

var jobCgroup = regexp.MustCompile(`/hpc/[^/]+/job_([0-9]+)(/|$)`)

func (d *Daemon) handlePidInfo(w http.ResponseWriter, r *http.Request, id peer.Identity, body []byte) {
	pid, err := strconv.Atoi(r.URL.Query().Get("pid"))
	if err != nil || pid <= 0 {
		peer.WriteErr(w, http.StatusBadRequest, &api.Error{Message: errNoJobForPid, Detail: "bad pid"})
		return
	}
	job, ok := jobOfPid(pid, d.exec == nil || !d.exec.Containers())
	if !ok {
		peer.WriteErr(w, http.StatusNotFound, &api.Error{Message: errNoJobForPid, Detail: fmt.Sprintf("pid %d", pid)})
		return
	}
	peer.WriteJSON(w, api.PidInfo{JobID: job})
}

// jobOfPid finds the job of pid by its cgroup and, when plain is set (steps
// run without cgroups), by SLURM_JOB_ID in its or an ancestor's
// environment.
func jobOfPid(pid int, plain bool) (uint64, bool) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if m := jobCgroup.FindStringSubmatch(sc.Text()); m != nil {
				if id, err := strconv.ParseUint(m[1], 10, 64); err == nil {
					return id, true
				}
			}
		}
	}
	if !plain {
		return 0, false
	}
	for p, hops := pid, 0; p > 1 && hops < 64; hops++ {
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p)); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				if v, ok := strings.CutPrefix(string(kv), "SLURM_JOB_ID="); ok {
					if id, err := strconv.ParseUint(v, 10, 64); err == nil {
						return id, true
					}
				}
			}
		}
		p = parentPid(p)
	}
	return 0, false
}

// parentPid is a process's parent (0 when unknown).
func parentPid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
