package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"hpc/cluster/hostlist"
)

// uiRequireEnv, when set, makes a missing Chromium a failure of
// TestDashboard instead of a skip (CI sets it).
const uiRequireEnv = "HPC_UI_REQUIRE"

// dashTopology is the lab's topology.conf: two leaf switches under one.
const dashTopology = "SwitchName=s1 Nodes=node[1-2]\nSwitchName=s2 Nodes=node[3-4]\nSwitchName=top Switches=s[1-2]\n"

// chromium returns the path of Debian's chromium (or another Chrome),
// skipping the test when there is none unless HPC_UI_REQUIRE is set.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(uiRequireEnv) != "" {
		t.Fatalf("chromium is not installed (apt-get install chromium) and %s is set", uiRequireEnv)
	}
	t.Skipf("chromium is not installed (apt-get install chromium); set %s=1 to make this a failure", uiRequireEnv)
	return ""
}

// browserT is a headless Chromium on one tab, which records every console
// error, uncaught exception and error log entry of the page.
type browserT struct {
	t    *testing.T
	ctx  context.Context
	shot string // the directory screenshots go to
	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T, chrome, shots string) *browserT {
	t.Helper()
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(profile), chromedp.WindowSize(1600, 1000))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browserT{t: t, ctx: ctx, shot: shots}
	err := chromedp.Listen(ctx, func(ev any) {
		var msg string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				msg = "console." + string(ev.Type) + ": " + strings.Join(args, " ")
			}
		case *runtime.EventExceptionThrown:
			msg = "uncaught exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				msg += " " + ev.ExceptionDetails.Exception.Description
			}
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				msg = "log error (" + string(ev.Entry.Source) + "): " + ev.Entry.Text + " " + ev.Entry.URL
			}
		}
		if msg != "" {
			b.mu.Lock()
			b.errs = append(b.errs, msg)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return b
}

// do runs actions on the tab, failing the test on an error.
func (b *browserT) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// waitJS waits until the JavaScript expression is true in the page.
func (b *browserT) waitJS(timeout time.Duration, what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main') ? document.querySelector('main').innerText.slice(0, 3000) : ''`))
		b.screenshot("failed")
		b.t.Fatalf("waiting %v for %s (%s): %v\npage:\n%s", timeout, what, expr, err, text)
	}
}

// fits waits until nothing in the page is wider than the window, and
// names what is when it is not.
func (b *browserT) fits(width int) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 15*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`document.documentElement.scrollWidth <= window.innerWidth + 1`,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		wide := b.eval(`Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right)).join('; ')`)
		b.screenshot("failed")
		b.t.Fatalf("the page is wider than %d px: %s", width, wide)
	}
}

// eval evaluates expr in the page.
func (b *browserT) eval(expr string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// screenshot writes the whole page as name.png into the artifacts.
func (b *browserT) screenshot(name string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return ""
	}
	path := filepath.Join(b.shot, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
	}
	return path
}

// checkNoErrors fails the test for every error the page reported.
func (b *browserT) checkNoErrors(when string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errs {
		b.t.Errorf("%s: the page reported %s", when, e)
	}
	b.errs = nil
}

// TestDashboard opens the dashboard of a lab (4 nodes: node1-3 controllers,
// node4 compute only, which serves the page; a topology.conf of two leaf
// switches) in headless Chromium and watches it, with no reload, while the
// lab changes: the page loads with no console error; a job appears, runs
// and finishes; a 2-node job is marked on its switch of the topology; an
// anonymous action is refused and a user who signed in with scontrol
// token's token sees a running job's output grow in its detail, opens a
// job's detail by keyboard (its script shown to its owner) and cancels
// the job from the page; the leader's daemon is
// killed, and the page shows the new leader and the killed node DOWN, then
// back once hpc up restarts it.
// The screenshots are written to test-artifacts/dashboard/.
func TestDashboard(t *testing.T) {
	needLab(t)
	chrome := chromium(t)
	l, out := startLab(t, "hpc-dash-", 4, "KillWait=2\n", func(top string) {
		if err := os.WriteFile(filepath.Join(top, "topology.conf"), []byte(dashTopology), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if want := fmt.Sprintf("Dashboard: http://%s1:%d/\n", l.net, l.api); !strings.Contains(out, want) {
		t.Errorf("hpc up does not print %q:\n%s", want, out)
	}
	shots := repoPath(t, "test-artifacts", "dashboard")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard screenshots: %s", shots)
	work := filepath.Join(l.top, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(work, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("http://%s4:%d/", l.net, l.api)

	b := newBrowser(t, chrome, shots)
	b.do("opening "+url, chromedp.Navigate(url))
	b.waitJS(30*time.Second, "the page to show a leader and four nodes",
		`document.getElementById('leader').dataset.leader !== '' && document.querySelectorAll('#node-grid [data-node]').length === 4`)
	// A reload would lose this mark.
	b.do("marking the page", chromedp.Evaluate[chromedp.Void](`window.hpcNoReload = 'kept'`))
	b.screenshot("1-loaded")
	b.checkNoErrors("loading")

	// A job appears, runs and finishes. Its name is shown as text, never
	// taken for HTML.
	id := l.submit(nobody, work, "-J", `<img src=x onerror="window.hpcInjected=1">`, "--wrap", "sleep 3")
	b.waitJS(60*time.Second, fmt.Sprintf("job %d running", id), fmt.Sprintf(`!!document.querySelector('#running tr[data-job="%d"]')`, id))
	b.waitJS(60*time.Second, fmt.Sprintf("job %d finished", id), fmt.Sprintf(`!!document.querySelector('#finished tr[data-job="%d"][data-state="COMPLETED"]')`, id))
	if got := b.eval(fmt.Sprintf(`String(window.hpcInjected) + ' ' + document.querySelectorAll('main img').length + ' ' + document.querySelector('#finished tr[data-job="%d"] td:nth-child(2)').textContent`, id)); got != `undefined 0 <img src=x onerror="window.hpcInjected=1">` {
		t.Errorf("a job name holding HTML: %q", got)
	}

	// A 2-node job is marked on the lowest switch that holds its nodes.
	two := l.submit(nobody, work, "-N", "2", "-t", "3", "--wrap", "sleep 170")
	l.waitState(two, "R")
	nodesOut, _, _ := l.run(0, l.top, "queue", "-h", "-j", fmt.Sprint(two), "-o", "%N")
	nodes, err := hostlist.Expand(strings.TrimSpace(nodesOut))
	if err != nil || len(nodes) != 2 {
		t.Fatalf("job %d's nodes: %q %v", two, nodesOut, err)
	}
	sw := dashSwitchOf(nodes)
	b.waitJS(30*time.Second, fmt.Sprintf("switch %s marked with job %d", sw, two),
		fmt.Sprintf(`(document.querySelector('[data-switch="%s"]') || {dataset: {}}).dataset.jobs === '%d'`, sw, two))
	t.Logf("job %d on %v: switch %s", two, nodes, sw)

	// Backfill, visibly: a job for the whole cluster waits for the 2-node
	// job's end (its expected start and nodes are drawn on the timeline),
	// and a short job starts beside it.
	big := l.submit(nobody, work, "-N", "4", "--exclusive", "-t", "2", "--wrap", "sleep 5")
	b.waitJS(60*time.Second, fmt.Sprintf("job %d pending with an expected start", big),
		fmt.Sprintf(`(r => !!r && !r.textContent.includes('N/A'))(document.querySelector('#pending tr[data-job="%d"]'))`, big))
	b.waitJS(30*time.Second, "its reservation on the timeline", `document.querySelectorAll('#timeline-lanes .bar[data-kind="planned"]').length === 4`)
	short := l.submit(nobody, work, "-t", "1", "--wrap", "sleep 40")
	b.waitJS(60*time.Second, fmt.Sprintf("job %d backfilled", short), fmt.Sprintf(`!!document.querySelector('#running tr[data-job="%d"]')`, short))
	b.screenshot("2-backfill-topology")

	// A narrow window: one column, nothing wider than the window.
	b.do("a narrow viewport", chromedp.EmulateViewport(420, 900))
	b.fits(420)
	b.screenshot("3-narrow")
	b.do("a wide viewport", chromedp.EmulateViewport(1600, 1000))

	dashActions(t, l, b, work, two)

	// The leader's daemon is killed: the page, served by node4, shows the
	// new leader and the killed node not responding, then DOWN.
	leader := b.eval(`document.getElementById('leader').dataset.leader`)
	l.stopDaemon(leader, syscall.SIGKILL)
	b.waitJS(60*time.Second, "a new leader", fmt.Sprintf(`(l => l !== '' && l !== '%s')(document.getElementById('leader').dataset.leader)`, leader))
	b.waitJS(90*time.Second, leader+" DOWN", fmt.Sprintf(`!!document.querySelector('#node-grid [data-node="%s"][data-state="down"]')`, leader))
	t.Logf("killed %s; the page shows %s leading", leader, b.eval(`document.getElementById('leader').dataset.leader`))
	b.screenshot("6-leader-killed")

	// hpc up brings the killed node back (its daemon re-attaches to what
	// it ran and cleans up); the page shows it responding again.
	if out, errs, code := l.run(0, l.top, "up", "--dir", l.dir); code != 0 {
		t.Fatalf("up after the kill: %d\n%s\n%s", code, out, errs)
	}
	b.waitJS(90*time.Second, leader+" back", fmt.Sprintf(`(n => !!n && n.dataset.state !== 'down' && n.dataset.noresp === 'false')(document.querySelector('#node-grid [data-node="%s"]'))`, leader))
	if got := b.eval(`String(window.hpcNoReload)`); got != "kept" {
		t.Errorf("the page was reloaded (mark %q)", got)
	}
	b.checkNoErrors("the run")
}

// dashActions checks the actions: refused to an anonymous viewer; a
// user who signs in with scontrol token's token cancels a job of theirs
// from the job's detail.
func dashActions(t *testing.T, l *labT, b *browserT, work string, id uint64) {
	t.Helper()
	url := fmt.Sprintf("http://%s4:%d/hpc/dashboard/action", l.net, l.api)
	body := fmt.Sprintf(`{"action":"cancel","job_id":%d}`, id)
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("an anonymous cancel: %s, want 403", resp.Status)
	}

	out, errs, code := l.run(nobody, work, "scontrol", "token")
	tok, ok := strings.CutPrefix(strings.TrimSpace(out), "SLURM_JWT=")
	if code != 0 || !ok {
		t.Fatalf("scontrol token: %d %q %q", code, out, errs)
	}
	b.do("signing in",
		chromedp.SendKeys(chromedp.ID("token"), "SLURM_JWT="+tok),
		chromedp.Click(chromedp.ID("signin-button")))
	b.waitJS(30*time.Second, "signed in as nobody", `document.body.dataset.viewer === 'nobody'`)
	dashOutputTail(t, l, b, work)
	// By keyboard: Enter on the job's button opens its detail.
	b.do("opening the job's detail", chromedp.Focus(chromedp.CSS(fmt.Sprintf(`#running tr[data-job="%d"] button`, id))), chromedp.KeyEvent("\r"))
	b.waitJS(30*time.Second, "the job's detail", fmt.Sprintf(`document.getElementById('detail').open && document.getElementById('detail').dataset.job === '%d'`, id))
	b.waitJS(10*time.Second, "the owner's script", `document.getElementById('detail-script').textContent.includes('sleep 170')`)
	b.screenshot("5-detail")
	b.do("cancelling from the page", chromedp.Click(chromedp.CSS(`#detail-actions button[data-action="cancel"]`)))
	b.waitJS(60*time.Second, fmt.Sprintf("job %d cancelled", id), fmt.Sprintf(`!!document.querySelector('#finished tr[data-job="%d"][data-state="CANCELLED"]')`, id))
	// Escape closes it, and the focus goes back to the job's button (the
	// row has moved to the finished jobs meanwhile).
	b.do("closing the detail", chromedp.KeyEvent(kb.Escape))
	b.waitJS(10*time.Second, "the detail closed, the focus on the job's button",
		fmt.Sprintf(`!document.getElementById('detail').open && document.activeElement.dataset.key === 'queue-job-%d'`, id))
	t.Logf("the page says: %s", b.eval(`document.getElementById('notice').textContent`))
}

// dashOutputTail checks a job's detail as its owner sees it while the
// job runs: its accounting row in sacct's fields (Elapsed counting on),
// and the tail of its output growing, line by line, with no reload.
func dashOutputTail(t *testing.T, l *labT, b *browserT, work string) {
	t.Helper()
	id := l.submit(nobody, work, "-t", "1", "-J", "tail", "--wrap", "for i in $(seq 1 50); do echo tail-line-$i; sleep 1; done")
	b.waitJS(60*time.Second, fmt.Sprintf("job %d running", id), fmt.Sprintf(`!!document.querySelector('#running tr[data-job="%d"] button')`, id))
	b.do("opening its detail", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#running tr[data-job="%d"] button`, id))))
	b.waitJS(30*time.Second, "its output's first lines", `document.getElementById('detail-stdout').textContent.includes('tail-line-2\n')`)
	lines := `document.getElementById('detail-stdout').textContent.trim().split('\n').length`
	first := b.eval(`String(` + lines + `)`)
	b.waitJS(30*time.Second, "three more lines", fmt.Sprintf(`%s >= %s + 3`, lines, first))
	b.waitJS(10*time.Second, "its sacct row", fmt.Sprintf(`(r => !!r && r.querySelector('[data-field="State"]').textContent === 'RUNNING' && r.querySelector('[data-field="JobName"]').textContent === 'tail' && /^00:00:(0[1-9]|[1-5]\d)$/.test(r.querySelector('[data-field="Elapsed"]').textContent))(document.querySelector('#detail-acct tr[data-acct="%d"]'))`, id))
	t.Logf("job %d's tail grew from %s lines to %s without a reload", id, first, b.eval(`String(`+lines+`)`))
	b.screenshot("4-output-tail")
	b.do("closing its detail", chromedp.KeyEvent(kb.Escape))
	b.waitJS(10*time.Second, "the detail closed", `!document.getElementById('detail').open`)
	if out, errs, code := l.run(nobody, work, "cancel", fmt.Sprint(id)); code != 0 {
		t.Errorf("scancel %d: %d %s %s", id, code, out, errs)
	}
}

// dashSwitchOf is the lowest switch of dashTopology holding nodes.
func dashSwitchOf(nodes []string) string {
	in := func(set ...string) bool {
		for _, n := range nodes {
			if n != set[0] && n != set[1] {
				return false
			}
		}
		return true
	}
	switch {
	case in("node1", "node2"):
		return "s1"
	case in("node3", "node4"):
		return "s2"
	}
	return "top"
}
