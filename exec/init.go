//go:build linux

package exec

import (
	"os"
	"runtime"

	"github.com/opencontainers/runc/libcontainer"
	_ "github.com/opencontainers/runc/libcontainer/nsenter" // joins namespaces before the Go runtime starts (cgo)
)

// pauseArg marks "<exe> init <pauseArg>": a step container's init process,
// its supervisor (stepd.go).
const pauseArg = "hpc-step-reaper"

func init() {
	// The supervisor starts its tasks from its main goroutine (stepd.go),
	// kept here on the main thread, so that the tasks are that thread's
	// children (/proc/PID/task/PID/children): hostPid finds them there
	// without listing the supervisor's threads.
	if len(os.Args) == 3 && os.Args[1] == "init" && os.Args[2] == pauseArg {
		runtime.LockOSThread()
	}
}

// InitIfChild must be the first thing main (and TestMain) does. When the
// program runs as libcontainer's container init ("<exe> init"), it performs
// that role and never returns; otherwise it returns at once. Consequently no
// command of the program may be named "init".
func InitIfChild() {
	if len(os.Args) < 2 || os.Args[1] != "init" {
		return
	}
	if len(os.Args) == 3 && os.Args[2] == pauseArg {
		supervise()
	}
	if len(os.Args) > 4 && os.Args[2] == taskExecArg {
		taskExec() // taskexec.go: the C constructor execs before this runs
	}
	libcontainer.Init() // never returns
	os.Exit(255)
}
