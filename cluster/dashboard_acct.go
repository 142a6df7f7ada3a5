package cluster

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
)

// dashAcct is one sacct row of a job's detail (the job, its batch step,
// its srun steps) in the fields a learner reads first, written as sacct
// 22.05 prints them: JobID, JobName, Partition, Account, AllocCPUS,
// State, ExitCode, Elapsed, Start, End, NodeList, MaxRSS, ReqMem,
// TotalCPU. A field sacct leaves blank is "".
type dashAcct struct {
	JobID     string `json:"JobID"`
	JobName   string `json:"JobName"`
	Partition string `json:"Partition"`
	Account   string `json:"Account"`
	AllocCPUS string `json:"AllocCPUS"`
	State     string `json:"State"`
	ExitCode  string `json:"ExitCode"`
	Elapsed   string `json:"Elapsed"`
	Start     string `json:"Start"`
	End       string `json:"End"`
	NodeList  string `json:"NodeList"`
	MaxRSS    string `json:"MaxRSS"`
	ReqMem    string `json:"ReqMem"`
	TotalCPU  string `json:"TotalCPU"`
	// Since is the start of a row not ended: the page counts its
	// Elapsed on from it.
	Since time.Time `json:"since,omitzero"`
}

// dashAcctRows writes accounting rows as sacct does, Elapsed counted to
// now for a row not ended.
func dashAcctRows(rows []api.AcctRow, now time.Time) []dashAcct {
	out := make([]dashAcct, 0, len(rows))
	for _, r := range rows {
		a := dashAcct{
			JobID: r.JobIDString(), JobName: r.JobName, Partition: r.Partition, Account: r.Account,
			AllocCPUS: strconv.Itoa(r.AllocCPUs), State: r.State,
			ExitCode: fmt.Sprintf("%d:%d", r.ExitCode, r.Signal),
			Start:    sacctTime(r.Start), End: sacctTime(r.End), NodeList: r.NodeList,
		}
		if r.CancelledBy != nil && strings.HasPrefix(r.State, string(api.StateCancelled)) {
			a.State = fmt.Sprintf("%s by %d", api.StateCancelled, *r.CancelledBy)
		}
		if !r.Start.IsZero() {
			end := r.End
			if end.IsZero() {
				end, a.Since = now, r.Start
			}
			a.Elapsed = sacctElapsed(end.Sub(r.Start))
		} else {
			a.Elapsed = sacctElapsed(0)
		}
		if r.Usage != nil {
			if r.Usage.MaxRSSKB > 0 {
				a.MaxRSS = strconv.FormatInt(r.Usage.MaxRSSKB, 10) + "K"
			}
			a.TotalCPU = sacctCPU(r.Usage.UserCPU + r.Usage.SystemCPU)
		}
		if r.ReqMemMB > 0 {
			a.ReqMem = strconv.FormatInt(r.ReqMemMB, 10) + "M"
		}
		out = append(out, a)
	}
	return out
}

// sacctTime is sacct's Start and End: local time without a zone, or
// Unknown.
func sacctTime(t time.Time) string {
	if t.IsZero() {
		return "Unknown"
	}
	return t.Local().Format("2006-01-02T15:04:05")
}

// sacctElapsed is sacct's Elapsed: [D-]HH:MM:SS.
func sacctElapsed(d time.Duration) string {
	secs := max(int64(d/time.Second), 0)
	days, h, m, s := secs/86400, secs/3600%24, secs/60%60, secs%60
	if days > 0 {
		return fmt.Sprintf("%d-%02d:%02d:%02d", days, h, m, s)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}

// sacctCPU is sacct's TotalCPU: MM:SS.mmm under an hour, as Elapsed
// above.
func sacctCPU(d time.Duration) string {
	if d >= time.Hour {
		return sacctElapsed(d)
	}
	ms := max(d.Milliseconds(), 0)
	return fmt.Sprintf("%02d:%02d.%03d", ms/60000, ms/1000%60, ms%1000)
}
