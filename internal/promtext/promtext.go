// Package promtext keeps a daemon's counters and histograms and writes
// them, with the figures read at scrape time, in Prometheus's text
// exposition format (version 0.0.4): a page of families, each with its
// HELP and TYPE lines and its series, families sorted by name and series
// by their labels, as Prometheus's own client library writes them.
//
// Why not that library (client_golang): every process of the one binary
// runs every linked package's init, and client_golang's (its default
// registry with the Go and process collectors, procfs's regular
// expressions, protobuf's descriptors, yaml) took 2.5-2.9 ms of each
// start on a 2-core machine: `perf stat -r 300 sbatch --version`, 7.5 ms
// with client_golang linked, 4.6-5.2 ms without (/bin/true: 1.25 ms).
// Every command, every container's init and every step's supervisor paid
// it. The format is small and
// fixed; the tests read the pages with Prometheus's own parser
// (prometheus/common's expfmt), so what this package writes is what
// Prometheus reads.
//
// It imports only the standard library.
package promtext

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Types of families.
const (
	Gauge     = "gauge"
	Counter   = "counter"
	Histogram = "histogram"
	Summary   = "summary"
)

// Family is a metric's name, help text, type and label names; its series
// are added to a Page with their label values.
type Family struct {
	Name, Help, Type string
	Labels           []string
}

// Count is a counter: a float that only goes up, safe for concurrent use.
type Count struct{ bits atomic.Uint64 }

// Add adds v (a negative v is ignored: a counter never goes down).
func (c *Count) Add(v float64) {
	if !(v > 0) {
		return
	}
	for {
		old := c.bits.Load()
		if c.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Inc adds one.
func (c *Count) Inc() { c.Add(1) }

// Value is the count so far.
func (c *Count) Value() float64 { return math.Float64frombits(c.bits.Load()) }

// Buckets is a histogram: observations counted in buckets by upper bound,
// with their sum, safe for concurrent use.
type Buckets struct {
	bounds []float64 // ascending upper bounds; +Inf is implicit

	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is above every bound
	sum    float64
}

// NewBuckets is a histogram with the given ascending upper bounds.
func NewBuckets(bounds []float64) *Buckets {
	if !slices.IsSorted(bounds) {
		panic("promtext: bucket bounds not ascending")
	}
	return &Buckets{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe counts v in the first bucket whose bound is at least v.
func (b *Buckets) Observe(v float64) {
	i, _ := slices.BinarySearch(b.bounds, v)
	b.mu.Lock()
	b.counts[i]++
	b.sum += v
	b.mu.Unlock()
}

// snapshot is the cumulative counts (one per bound, then the total) and
// the sum.
func (b *Buckets) snapshot() ([]uint64, float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cum := make([]uint64, len(b.counts))
	var n uint64
	for i, c := range b.counts {
		n += c
		cum[i] = n
	}
	return cum, b.sum
}

// BucketsBy is histograms by one label's value, each made on its first
// observation (no series before that), all with the same bounds.
type BucketsBy struct {
	bounds []float64
	mu     sync.Mutex
	by     map[string]*Buckets
}

// NewBucketsBy is histograms by a label's value with the given bounds.
func NewBucketsBy(bounds []float64) *BucketsBy {
	return &BucketsBy{bounds: bounds, by: map[string]*Buckets{}}
}

// Observe counts v in value's histogram.
func (b *BucketsBy) Observe(value string, v float64) {
	b.mu.Lock()
	h := b.by[value]
	if h == nil {
		h = NewBuckets(b.bounds)
		b.by[value] = h
	}
	b.mu.Unlock()
	h.Observe(v)
}

// AddTo adds every histogram made so far to p under f (whose one label
// is the value's).
func (b *BucketsBy) AddTo(p *Page, f *Family) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for value, h := range b.by {
		p.AddBuckets(f, h, value)
	}
}

// Page is one scrape's families, written by WriteTo.
type Page struct {
	fams map[string]*pageFamily
}

type pageFamily struct {
	f      *Family
	series []series
}

// series is one series's labels as written and its lines.
type series struct{ labels, lines string }

// Add adds a gauge's or a counter's value with its label values (in the
// order of f.Labels).
func (p *Page) Add(f *Family, v float64, values ...string) {
	labels := labelText(f, values, "", "")
	p.add(f, series{labels, f.Name + labels + " " + formatFloat(v) + "\n"})
}

// AddBuckets adds a histogram's buckets, sum and count with its label
// values.
func (p *Page) AddBuckets(f *Family, b *Buckets, values ...string) {
	cum, sum := b.snapshot()
	var sb strings.Builder
	for i, n := range cum {
		le := "+Inf"
		if i < len(b.bounds) {
			le = formatFloat(b.bounds[i])
		}
		sb.WriteString(f.Name + "_bucket" + labelText(f, values, "le", le) + " " + strconv.FormatUint(n, 10) + "\n")
	}
	labels := labelText(f, values, "", "")
	sb.WriteString(f.Name + "_sum" + labels + " " + formatFloat(sum) + "\n")
	sb.WriteString(f.Name + "_count" + labels + " " + strconv.FormatUint(cum[len(cum)-1], 10) + "\n")
	p.add(f, series{labels, sb.String()})
}

// AddSummary adds a summary's quantiles (each a quantile and its value),
// sum and count.
func (p *Page) AddSummary(f *Family, quantiles [][2]float64, sum float64, count uint64) {
	var sb strings.Builder
	for _, q := range quantiles {
		sb.WriteString(f.Name + labelText(f, nil, "quantile", formatFloat(q[0])) + " " + formatFloat(q[1]) + "\n")
	}
	sb.WriteString(f.Name + "_sum " + formatFloat(sum) + "\n")
	sb.WriteString(f.Name + "_count " + strconv.FormatUint(count, 10) + "\n")
	p.add(f, series{"", sb.String()})
}

func (p *Page) add(f *Family, s series) {
	if p.fams == nil {
		p.fams = map[string]*pageFamily{}
	}
	pf := p.fams[f.Name]
	if pf == nil {
		pf = &pageFamily{f: f}
		p.fams[f.Name] = pf
	}
	pf.series = append(pf.series, s)
}

// Text is the page in the text format: families by name, each's HELP and
// TYPE, then its series by their labels.
func (p *Page) Text() []byte {
	names := make([]string, 0, len(p.fams))
	for n := range p.fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var b []byte
	for _, n := range names {
		pf := p.fams[n]
		b = append(b, "# HELP "+n+" "...)
		b = append(b, escapeHelp(pf.f.Help)...)
		b = append(b, "\n# TYPE "+n+" "+pf.f.Type+"\n"...)
		slices.SortStableFunc(pf.series, func(x, y series) int { return strings.Compare(x.labels, y.labels) })
		for _, s := range pf.series {
			b = append(b, s.lines...)
		}
	}
	return b
}

// labelText is `{name="value",...}` for f's labels and the values given,
// then extra=extraValue where extra is not empty; "" for no labels.
// Values missing are empty.
func labelText(f *Family, values []string, extra, extraValue string) string {
	if len(f.Labels) == 0 && extra == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range f.Labels {
		if i > 0 {
			b.WriteByte(',')
		}
		var v string
		if i < len(values) {
			v = values[i]
		}
		b.WriteString(name + `="` + escapeLabel(v) + `"`)
	}
	if extra != "" {
		if len(f.Labels) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(extra + `="` + escapeLabel(extraValue) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
func escapeLabel(s string) string { return labelEscaper.Replace(s) }

// formatFloat writes v as the format spells it (+Inf, -Inf, NaN).
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
