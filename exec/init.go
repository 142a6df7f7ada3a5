//go:build linux

package exec

import (
	"os"
	"os/signal"
	"runtime"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // joins namespaces before the Go runtime starts (cgo)
	"golang.org/x/sys/unix"
)

// pauseArg marks "<exe> init <pauseArg>": a step container's init process.
const pauseArg = "hpc-step-reaper"

// InitIfChild must be the first thing main (and TestMain) does. When the
// program runs as libcontainer's container init ("<exe> init"), it performs
// that role and never returns; otherwise it returns at once. Consequently no
// command of the program may be named "init".
func InitIfChild() {
	if len(os.Args) < 2 || os.Args[1] != "init" {
		return
	}
	if len(os.Args) == 3 && os.Args[2] == pauseArg {
		reap()
	}
	libcontainer.Init() // never returns
	os.Exit(255)
}

// reap is the init process of a step's pid namespace: it holds the namespace
// open while the step's processes run beside it, adopts and reaps orphans, and
// ignores signals (the executor ends it with SIGKILL from outside, which ends
// the whole namespace).
func reap() {
	runtime.GOMAXPROCS(1)
	signal.Ignore(unix.SIGHUP, unix.SIGINT, unix.SIGTERM, unix.SIGQUIT, unix.SIGABRT,
		unix.SIGUSR1, unix.SIGUSR2, unix.SIGPIPE, unix.SIGALRM, unix.SIGTSTP,
		unix.SIGTTIN, unix.SIGTTOU, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGVTALRM)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, unix.SIGCHLD)
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 || err != nil {
				break
			}
		}
		<-ch
	}
}
