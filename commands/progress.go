package commands

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows someone waiting at a terminal how far along a wait is
// (hpc up's nodes coming up, sbatch --wait's job): a bar with a count, or
// a spinner, with a description and the time elapsed, redrawn on one line
// and cleared at the end. On anything but a terminal there is none (nil):
// scripts and tests read these commands' output, which stays as it was.
type progress struct {
	bar *progressbar.ProgressBar
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newProgress is a bar of max steps (a spinner when max is -1) on w, or
// nil when w is not a terminal.
func newProgress(w io.Writer, max int, desc string) *progress {
	if !isTerminal(w) {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetRenderBlankState(true),
		progressbar.OptionSetWidth(20),
		progressbar.OptionThrottle(50 * time.Millisecond),
	}
	if max < 0 {
		opts = append(opts, progressbar.OptionSpinnerType(14),
			progressbar.OptionSetSpinnerChangeInterval(100*time.Millisecond))
	} else {
		opts = append(opts, progressbar.OptionShowCount())
	}
	return &progress{bar: progressbar.NewOptions(max, opts...)}
}

// describe changes the text shown; nothing on a nil progress.
func (p *progress) describe(s string) {
	if p != nil {
		p.bar.Describe(s)
	}
}

// set moves the bar to n steps done.
func (p *progress) set(n int) {
	if p != nil {
		_ = p.bar.Set(n)
	}
}

// done clears the line, so what is printed next starts on a clean one.
func (p *progress) done() {
	if p == nil {
		return
	}
	_ = p.bar.Exit()
	_ = p.bar.Clear()
}
