package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// Result is a scenario's outcome.
type Result string

// The outcomes: PASS and FAIL are the scenario's own check of what the lab
// did; SKIP says the lab lacks what the scenario needs (a topology, GPUs,
// an idle queue) and why.
const (
	Pass Result = "PASS"
	Fail Result = "FAIL"
	Skip Result = "SKIP"
)

// Verdict is what a scenario found, with the evidence it judged from.
type Verdict struct {
	Scenario string   `json:"scenario"`
	Result   Result   `json:"result"`
	Summary  string   `json:"summary"`
	Evidence []string `json:"evidence,omitempty"`
	// Jobs are the ids of the jobs the scenario submitted.
	Jobs []uint64 `json:"jobs,omitempty"`
	// LabRestored says whether the lab was found again as it was before
	// the scenario (jobs, nodes' states, QoS, accounts and associations);
	// Differences lists what was not.
	LabRestored bool     `json:"lab_restored"`
	Differences []string `json:"differences,omitempty"`
	Seconds     float64  `json:"seconds"`
}

// Scenario is one guided scenario.
type Scenario struct {
	Name  string
	Title string // one line, for `list`
	// Needs says what the lab must have (shown by `list`).
	Needs string
	run   func(r *Run) Verdict
}

// all are the scenarios, in the order `list` shows them.
var all = []*Scenario{backfill, gang, kubeBinding, topology, fairshare, preemption, failover, nodeFailure, gpus, containers, accounting}

// List returns the scenarios.
func List() []*Scenario { return all }

// Find returns the scenario of that name, or nil.
func Find(name string) *Scenario {
	for _, s := range all {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Options shape a run.
type Options struct {
	// Scale multiplies the jobs' run times (sleep durations): 1 is the
	// classroom's pace, 0.1 a quick check. Time limits stay whole
	// minutes, as Slurm's are.
	Scale float64
	// Out receives the narration; nil prints none.
	Out io.Writer
	// Terminal makes the narration bold where it helps; off, it is plain
	// lines.
	Terminal bool
	// Cwd, Env and Hostname are the submitting process's, as sbatch reads
	// them.
	Cwd      string
	Env      []string
	Hostname string
	// Lab stops and starts the lab's node daemons (node-failure,
	// failover); nil where the lab's directory is out of reach.
	Lab Lab
	// Image is the root file system the containers scenario runs its
	// job in ("": the first of the lab's images/ that has a /bin/sh).
	Image string
	// Waiting, when set, shows that the scenario waits for something (a
	// spinner on a terminal) until the wait ends; nil shows nothing.
	Waiting func(what string) Waiter
}

// Waiter is what shows a wait: Clear takes it off the line before the
// narration prints one, Done ends it.
type Waiter interface {
	Clear()
	Done()
}

// Run is one scenario's run on a lab: its client, what it submitted, and
// what it must undo.
type Run struct {
	ctx  context.Context
	cl   *api.Client
	o    Options
	s    *Scenario
	cfg  config.Config
	dash string    // the dashboard's address
	jobs []uint64  // what the scenario submitted, in order
	undo []undoOp  // what to undo, done last first
	t0   time.Time // the run's start
	// waiting shows the wait in progress (Options.Waiting), nil if none.
	waiting Waiter
}

type undoOp struct {
	what string
	fn   func(ctx context.Context) error
}

// abort ends a scenario early with a verdict (a SKIP, or a FAIL on an
// error of the lab); Execute recovers it.
type abort struct{ v Verdict }

// Execute runs the scenario on the lab the client reaches and returns its
// verdict. It refuses (SKIP) a lab that runs or queues jobs, cancels what
// the scenario left, undoes its changes and checks the lab is as found.
func Execute(ctx context.Context, cl *api.Client, s *Scenario, o Options) (v Verdict) {
	if o.Scale <= 0 {
		o.Scale = 1
	}
	r := &Run{ctx: ctx, cl: cl, o: o, s: s, t0: time.Now()}
	before, err := r.snapshot()
	if err != nil {
		return Verdict{Scenario: s.Name, Result: Fail, Summary: "cannot read the lab: " + err.Error()}
	}
	if err := cl.Config(ctx, &r.cfg); err != nil {
		return Verdict{Scenario: s.Name, Result: Fail, Summary: "cannot read the configuration: " + err.Error()}
	}
	r.dash = dashboardURL(&r.cfg)
	r.header()
	if busy := before.busy(); busy != "" {
		v = Verdict{Scenario: s.Name, Result: Skip, Summary: "the lab is busy (" + busy + "): scenarios need an idle queue; scancel them or wait", LabRestored: true}
		v.Seconds = time.Since(r.t0).Seconds()
		return v
	}
	v = r.protected()
	v.Scenario, v.Jobs = s.Name, r.jobs
	v.Differences = r.cleanUp(before)
	v.LabRestored = len(v.Differences) == 0
	v.Seconds = math.Round(time.Since(r.t0).Seconds()*10) / 10
	return v
}

// protected runs the scenario, turning an abort into its verdict.
func (r *Run) protected() (v Verdict) {
	defer func() {
		if p := recover(); p != nil {
			a, ok := p.(abort)
			if !ok {
				panic(p)
			}
			v = a.v
		}
	}()
	return r.s.run(r)
}

// skip ends the scenario with SKIP and why.
func (r *Run) skip(format string, args ...any) {
	panic(abort{Verdict{Result: Skip, Summary: fmt.Sprintf(format, args...)}})
}

// check ends the scenario with FAIL when the lab answered with an error.
func (r *Run) check(err error, doing string) {
	if err != nil {
		panic(abort{Verdict{Result: Fail, Summary: doing + ": " + errText(err)}})
	}
}

// errText is an API error as the commands print it.
func errText(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) && ae.Detail != "" {
		return ae.Message + ": " + ae.Detail
	}
	return err.Error()
}

// onUndo records what to do when the scenario ends, whatever its outcome.
func (r *Run) onUndo(what string, fn func(ctx context.Context) error) {
	r.undo = append(r.undo, undoOp{what, fn})
}

// dur is d at the run's scale, at least a second.
func (r *Run) dur(d time.Duration) time.Duration {
	return max(time.Duration(float64(d)*r.o.Scale).Round(100*time.Millisecond), time.Second)
}

// sleepCmd is the job command that runs for d.
func sleepCmd(d time.Duration) string {
	return "sleep " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// dashboardURL is the first node's dashboard.
func dashboardURL(cfg *config.Config) string {
	if len(cfg.Nodes) == 0 {
		return ""
	}
	port := cfg.APIPort
	if port == 0 {
		port = config.DefaultAPIPort
	}
	return "http://" + net.JoinHostPort(cfg.Nodes[0].Addr, strconv.Itoa(port)) + "/"
}

// --- Narration.

func (r *Run) printf(format string, args ...any) {
	if r.waiting != nil {
		r.waiting.Clear() // the line is the narration's; the wait shows again after
	}
	if r.o.Out != nil {
		fmt.Fprintf(r.o.Out, format, args...)
	}
}

func (r *Run) header() {
	if r.o.Terminal {
		r.printf("\033[1m== %s: %s\033[0m\n", r.s.Name, r.s.Title)
	} else {
		r.printf("== %s: %s\n", r.s.Name, r.s.Title)
	}
	if r.dash != "" {
		r.printf("Dashboard: %s\n", r.dash)
	}
}

// say narrates one step.
func (r *Run) say(format string, args ...any) {
	r.printf("%s %s\n", r.clock(), fmt.Sprintf(format, args...))
}

// typeCmd shows a command the learner may type in another terminal.
func (r *Run) typeCmd(cmd string) {
	if r.o.Terminal {
		r.printf("         \033[1m$ %s\033[0m\n", cmd)
	} else {
		r.printf("         $ %s\n", cmd)
	}
}

// watch points at the dashboard.
func (r *Run) watch(what string) {
	r.printf("         dashboard: %s\n", what)
}

// clock is the time since the run began, as the narration's margin.
func (r *Run) clock() string {
	return fmt.Sprintf("[%5.1fs]", time.Since(r.t0).Seconds())
}

// Print writes a verdict for people: the result and summary, the
// evidence, and whether the lab was left as found.
func Print(w io.Writer, v Verdict, terminal bool) {
	res := string(v.Result)
	if terminal {
		color := map[Result]string{Pass: "32", Fail: "31", Skip: "33"}[v.Result]
		res = "\033[1;" + color + "m" + res + "\033[0m"
	}
	fmt.Fprintf(w, "%s %s: %s\n", res, v.Scenario, v.Summary)
	for _, e := range v.Evidence {
		fmt.Fprintf(w, "  - %s\n", e)
	}
	if v.LabRestored {
		fmt.Fprintf(w, "  lab left as found (%.1f s)\n", v.Seconds)
	} else {
		fmt.Fprintf(w, "  lab NOT as found: %s\n", strings.Join(v.Differences, "; "))
	}
}

// hostname is the submit host sbatch would record.
func (o *Options) hostname() string {
	if o.Hostname != "" {
		return o.Hostname
	}
	h, _ := os.Hostname()
	return h
}
