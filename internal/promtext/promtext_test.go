package promtext

import (
	"bytes"
	"math"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// parse reads a page as Prometheus does, failing the test on any error.
func parse(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("Prometheus's parser refuses the page: %v\n%s", err, text)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.Label {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// Label values and help texts with the characters the format escapes
// (backslash, double quote, newline) come back as they went in; series
// of one family added apart stay one family.
func TestPageReadsBack(t *testing.T) {
	part := &Family{Name: "x_jobs", Type: Gauge, Help: "Jobs \\ by \"partition\"\nand state.", Labels: []string{"partition", "state"}}
	total := &Family{Name: "a_total", Type: Counter, Help: "A count."}
	odd := []string{`de"bug`, `back\slash`, "new\nline", "", "plain", "ünï"}
	var c Count
	c.Add(2.5)
	c.Add(-1) // ignored
	c.Inc()
	var p Page
	for i, v := range odd {
		p.Add(part, float64(i), v, "PENDING")
		if i == 2 {
			p.Add(total, c.Value()) // another family's series between
		}
	}
	text := p.Text()
	fams := parse(t, text)
	f := fams["x_jobs"]
	if f == nil || f.GetType() != dto.MetricType_GAUGE || f.GetHelp() != part.Help {
		t.Fatalf("family %v", f)
	}
	if len(f.Metric) != len(odd) {
		t.Fatalf("%d series, want %d", len(f.Metric), len(odd))
	}
	got := map[string]float64{}
	for _, m := range f.Metric {
		l := labelsOf(m)
		if l["state"] != "PENDING" {
			t.Errorf("state %q", l["state"])
		}
		got[l["partition"]] = m.GetGauge().GetValue()
	}
	for i, v := range odd {
		if g, ok := got[v]; !ok || g != float64(i) {
			t.Errorf("partition %q: %v (present %v), want %d", v, g, ok, i)
		}
	}
	if v := fams["a_total"].GetMetric()[0].GetCounter().GetValue(); v != 3.5 {
		t.Errorf("counter %v, want 3.5", v)
	}
	// Families by name, so the page is the same for the same figures.
	if i, j := bytes.Index(text, []byte("# HELP a_total")), bytes.Index(text, []byte("# HELP x_jobs")); i < 0 || j < i {
		t.Errorf("families out of order:\n%s", text)
	}
	if !bytes.Equal(text, p.Text()) {
		t.Error("the same page written twice differs")
	}
}

// A histogram's buckets are cumulative, an observation on a bound counts
// in that bound's bucket, and sum and count are every observation's.
func TestBucketsReadBack(t *testing.T) {
	f := &Family{Name: "lat_seconds", Type: Histogram, Help: "Latency.", Labels: []string{"kind"}}
	b := NewBuckets([]float64{0.1, 0.5, 1})
	for _, v := range []float64{0.05, 0.1, 0.3, 0.7, 2, 5} {
		b.Observe(v)
	}
	by := NewBucketsBy([]float64{1})
	var p Page
	by.AddTo(&p, f) // nothing observed: no series
	if len(p.Text()) != 0 {
		t.Fatalf("a family with no series: %q", p.Text())
	}
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { by.Observe("srun", 0.5) })
	}
	wg.Wait()
	by.AddTo(&p, f)
	p.AddBuckets(f, b, "batch")
	fams := parse(t, p.Text())
	h := map[string]*dto.Histogram{}
	for _, m := range fams["lat_seconds"].GetMetric() {
		h[labelsOf(m)["kind"]] = m.GetHistogram()
	}
	batch := h["batch"]
	if batch.GetSampleCount() != 6 || math.Abs(batch.GetSampleSum()-8.15) > 1e-9 {
		t.Errorf("count %d sum %v, want 6 and 8.15", batch.GetSampleCount(), batch.GetSampleSum())
	}
	want := map[float64]uint64{0.1: 2, 0.5: 3, 1: 4}
	for _, bk := range batch.GetBucket() {
		if n, ok := want[bk.GetUpperBound()]; ok && n != bk.GetCumulativeCount() {
			t.Errorf("le=%v: %d, want %d", bk.GetUpperBound(), bk.GetCumulativeCount(), n)
		}
	}
	if h["srun"].GetSampleCount() != 100 || h["srun"].GetBucket()[0].GetCumulativeCount() != 100 {
		t.Errorf("srun: %v", h["srun"])
	}
}

// The runtime's and the process's figures are there under the names
// Prometheus's Go client gives them, with sensible values.
func TestRuntimeFigures(t *testing.T) {
	var p Page
	p.AddRuntime()
	fams := parse(t, p.Text())
	for name, typ := range map[string]dto.MetricType{
		"go_goroutines": dto.MetricType_GAUGE, "go_memstats_alloc_bytes_total": dto.MetricType_COUNTER,
		"go_gc_duration_seconds": dto.MetricType_SUMMARY, "process_cpu_seconds_total": dto.MetricType_COUNTER,
		"process_resident_memory_bytes": dto.MetricType_GAUGE, "process_start_time_seconds": dto.MetricType_GAUGE,
		"process_open_fds": dto.MetricType_GAUGE, "process_max_fds": dto.MetricType_GAUGE,
	} {
		f := fams[name]
		if f == nil || f.GetType() != typ {
			t.Errorf("%s: %v, want a %v", name, f, typ)
		}
	}
	if v := fams["go_goroutines"].GetMetric()[0].GetGauge().GetValue(); v < 1 {
		t.Errorf("goroutines %v", v)
	}
	if v := fams["process_resident_memory_bytes"].GetMetric()[0].GetGauge().GetValue(); v < 1<<20 {
		t.Errorf("RSS %v", v)
	}
	if v := fams["process_start_time_seconds"].GetMetric()[0].GetGauge().GetValue(); v < 1.7e9 {
		t.Errorf("start time %v", v)
	}
	if !strings.Contains(string(p.Text()), `go_info{version="go`) {
		t.Error("no go_info")
	}
}
