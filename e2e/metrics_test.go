package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Every daemon of a lab serves /metrics on its API port's plain-HTTP side
// (an anonymous viewer on loopback may look): one, the leader, exports the
// cluster-wide figures, so that a scrape of every node counts each job
// once; a job run in a container moves them and the launch of its batch
// script is counted on the node that ran it.
func TestLabMetrics(t *testing.T) {
	needLab(t)
	l, _ := startLab(t, "hpc-metrics-", 3, "KillWait=2\n")
	work := filepath.Join(l.top, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"node1", "node2", "node3"}
	// sum adds a figure over every node's scrape, and says how many
	// nodes export it.
	sum := func(name string, labels ...string) (total float64, exporters int, seen string) {
		for i := range nodes {
			fams, err := scrapeLab(fmt.Sprintf("%s%d:%d", l.net, i+1, l.api))
			if err != nil {
				return 0, 0, err.Error()
			}
			if v, ok := labFigure(fams, name, labels...); ok {
				total += v
				exporters++
			}
		}
		return total, exporters, fmt.Sprintf("%s%v: %v on %d nodes", name, labels, total, exporters)
	}
	wantOnce := func(what, name string, want float64, labels ...string) {
		t.Helper()
		waitFor(t, 60*time.Second, what, func() (bool, string) {
			v, n, seen := sum(name, labels...)
			return v == want && n == 1, seen
		})
	}
	wantOnce("the leader's node figures", "slurm_nodes_idle", 3)
	waitFor(t, 60*time.Second, "one leader among the three controllers", func() (bool, string) {
		v, n, seen := sum("hpc_raft_leader")
		return v == 1 && n == 3, seen
	})
	wantOnce("the CPUs", "slurm_cpus_total", 6)
	waitFor(t, 60*time.Second, "every node's gossip", func() (bool, string) {
		v, n, seen := sum("hpc_gossip_members", "state=alive")
		return v == 9 && n == 3, seen
	})

	id := l.submit(nobody, work, "-p", "gpu", "--gres=gpu:1", "--wrap", "sleep 300")
	t.Cleanup(func() { l.run(0, l.top, "cancel", fmt.Sprint(id)) })
	l.waitState(id, "R")
	wantOnce("the running job", "slurm_jobs_running", 1)
	wantOnce("its GPU", "slurm_gpus_alloc", 1)
	wantOnce("its partition", "hpc_partition_jobs", 1, "partition=gpu", "state=RUNNING")
	waitFor(t, 60*time.Second, "the launch on its node", func() (bool, string) {
		v, n, seen := sum("hpc_step_launch_seconds", "kind=batch")
		return v == 1 && n == 1, seen
	})
	if _, errs, code := l.run(0, l.top, "cancel", fmt.Sprint(id)); code != 0 {
		t.Fatalf("scancel: %s", errs)
	}
	wantOnce("the cancelled job", "slurm_jobs_cancelled", 1)
	wantOnce("no job running", "slurm_jobs_running", 0)
	wantOnce("its GPU back", "slurm_gpus_alloc", 0)
}

// scrapeLab GETs a node's /metrics (addr: its API address) and parses it.
func scrapeLab(addr string) (map[string]*dto.MetricFamily, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics on %s: %s", addr, resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(resp.Body)
}

// labFigure is the value (a histogram's count) of the series of name
// whose labels include those given ("k=v").
func labFigure(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			found := false
			for _, l := range m.Label {
				found = found || (l.GetName() == k && l.GetValue() == v)
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}
