package format

import (
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/openapi"
)

// ShowStep renders step s of job j (one of JobSteps(jobs)) as scontrol show
// step does. A step's own time limit is UNLIMITED unless it has one; hpc
// lays out an srun step's tasks in blocks (Dist=Block) and keeps no srun
// pid, so SrunHost:Pid is the launching node and 0; a batch step has no
// srun ("(null):0") and no distribution.
func ShowStep(j *api.Job, s Step, oneLiner bool) string {
	r := newRecord(oneLiner)
	id := "StepId=" + s.StepID()
	if j.ArrayJobID != 0 {
		id = "StepId=" + strconv.FormatUint(j.ArrayJobID, 10) + "_" + strconv.Itoa(j.ArrayTaskID) + "." + s.ID
	}
	limit := "UNLIMITED"
	if s.TimeLimitMin > 0 {
		limit = mins2time(s.TimeLimitMin)
	}
	r.add(id + " UserId=" + strconv.FormatUint(uint64(s.UID), 10) + " StartTime=" + ISOTime(s.Start) + " TimeLimit=" + limit)
	r.nl()
	r.add("State=" + s.State + " Partition=" + orNull(s.Partition) + " NodeList=" + openapi.NodeList(s.Nodes))
	r.nl()
	r.add("Nodes=" + strconv.Itoa(len(s.Nodes)) + " CPUs=" + strconv.Itoa(s.CPUs) + " Tasks=" + strconv.Itoa(s.Tasks) +
		" Name=" + orNull(s.Name) + " Network=(null)")
	r.nl()
	var mem int64
	for _, a := range j.Alloc {
		for _, n := range s.Nodes {
			if a.Node == n {
				mem += a.MemMB
			}
		}
	}
	r.add("TRES=" + orNull(openapi.TRESString(int64(s.CPUs), mem, int64(len(s.Nodes)), 0, nil)))
	r.nl()
	r.add("ResvPorts=(null)")
	r.nl()
	r.add("CPUFreqReq=Default")
	host := "(null)"
	if st := stepOf(j, s.ID); st != nil {
		r.add(" Dist=Block")
		host = orNull(st.Launcher)
	}
	r.nl()
	r.add("SrunHost:Pid=" + host + ":0")
	return r.end(oneLiner)
}

// stepOf is the srun step of j whose id is id ("0", "1", ...), or nil
// (the batch step).
func stepOf(j *api.Job, id string) *api.Step {
	n, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return nil
	}
	if i := j.StepIndex(uint32(n)); i >= 0 {
		return &j.Steps[i]
	}
	return nil
}

// CompletingJob is scontrol completing's line for a COMPLETING job: when
// it ended, how long it has been completing, and its nodes still
// completing and down. nodes gives the nodes' states. A job whose end hpc
// has not recorded yet (its nodes are still reporting) ends "now".
func CompletingJob(j *api.Job, nodes []api.Node, now time.Time) string {
	end := j.EndTime
	if end.IsZero() || end.After(now) {
		end = now
	}
	down := map[string]bool{}
	for _, n := range nodes {
		down[n.Name] = openapi.ParseNodeState(n.State).Base() == openapi.NodeBaseDown
	}
	var comp, gone []string
	for _, n := range j.NodeNames() {
		if down[n] {
			gone = append(gone, n)
		} else {
			comp = append(comp, n)
		}
	}
	var b strings.Builder
	b.WriteString("JobId=" + strconv.FormatUint(j.ID, 10) + " EndTime=" + ISOTime(end) +
		" CompletingTime=" + secs2time(int64(now.Sub(end)/time.Second)) + " ")
	if len(comp) > 0 {
		b.WriteString("Nodes(COMPLETING)=" + openapi.NodeList(comp) + " ")
	}
	if len(gone) > 0 {
		b.WriteString("Nodes(DOWN)=" + openapi.NodeList(gone) + " ")
	}
	b.WriteString("\n")
	return b.String()
}
