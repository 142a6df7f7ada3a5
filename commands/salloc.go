package commands

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

// sallocMain is salloc: an allocation, and a shell (or the command given)
// run here with its SLURM_* variables; srun in it runs steps of the
// allocation. The allocation ends when the command exits, with its status.
func sallocMain(e *Env, prog string, args []string) int {
	o, code, done := parseRun(e, prog, args)
	if done {
		return code
	}
	o.sayOptions(e, prog)
	argv := o.argv
	if len(argv) == 0 {
		shell := e.Getenv("SHELL")
		if shell == "" {
			shell = "/bin/sh"
		}
		argv = []string{shell}
	}
	con := &console{out: e.Stdout, err: e.Stderr}
	// Ctrl-C belongs to the shell; salloc itself only stops waiting.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl, err := e.Client(ctx)
	if err != nil {
		_, msg := errText(err)
		e.errorf(prog, "%s", msg)
		return 1
	}
	spec := o.spec
	// pyxis's salloc: the container options are for the allocation's
	// steps. The command salloc runs stays on the host, and the sruns it
	// starts find them in their environment (as srun passes them on).
	var ctrEnv []string
	if spec.ContainerImage != "" {
		ctrEnv = []string{jobspec.EnvContainerImage + "=" + spec.ContainerImage,
			jobspec.EnvContainerMounts + "=" + spec.ContainerMounts,
			jobspec.EnvContainerWorkDir + "=" + spec.ContainerWorkDir}
	}
	spec.ContainerImage, spec.ContainerMounts, spec.ContainerWorkDir = "", "", ""
	spec.Script = api.HolderScript
	spec.SubmitHost = e.Hostname
	if !o.set["job-name"] {
		spec.Name = "interactive"
		if len(o.argv) > 0 {
			spec.Name = filepath.Base(o.argv[0])
		}
	}
	asked := time.Now()
	a, code, ok := allocate(ctx, e, prog, con, cl, spec, o, sigs)
	if !ok {
		return code
	}
	id := a.Job.ID
	ringBell(e, o.bell, time.Since(asked))
	if !o.quiet {
		con.printf("%s: Granted job allocation %d\n", prog, id)
		con.printf("%s: Nodes %s are ready for job\n", prog, envValue(a.Env, "SLURM_JOB_NODELIST"))
	}
	if o.noShell {
		return 0 // the allocation stays until its time limit or scancel
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.Stdout, e.Stderr
	cmd.Dir = o.spec.WorkDir
	cmd.Env = append(append(append(append([]string(nil), e.Environ...), a.Env...), ctrEnv...), "HPC_SOCKET="+cl.Socket)
	rc := 0
	if err := cmd.Start(); err != nil {
		e.errorf(prog, "%v", err)
		release(e, prog, cl, exitRelease(id, 127))
		return 127
	}
	// The allocation may end under the command (time limit, scancel).
	revoked := make(chan struct{})
	wctx, stopWatch := context.WithCancel(ctx)
	go func() {
		if j, err := cl.Wait(wctx, id); err == nil && j.State.Final() {
			close(revoked)
			con.printf("%s: Job allocation %d has been revoked.\n", prog, id)
			sig := syscall.SIGHUP
			if o.killCommand > 0 {
				sig = syscall.Signal(o.killCommand)
			}
			_ = cmd.Process.Signal(sig)
		}
	}()
	go func() {
		for sig := range sigs {
			if sig != os.Interrupt { // the terminal gives Ctrl-C to the shell itself
				_ = cmd.Process.Signal(sig)
			}
		}
	}()
	err = cmd.Wait()
	stopWatch()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			rc = 128 + int(ws.Signal())
			if o.verbose > 0 {
				con.printf("%s: Command \"%s\" was terminated by signal %d\n", prog, argv[0], int(ws.Signal()))
			}
		} else {
			rc = ee.ExitCode()
		}
	default:
		rc = 1
	}
	select {
	case <-revoked:
		return rc
	default:
	}
	if !o.quiet {
		con.printf("%s: Relinquishing job allocation %d\n", prog, id)
	}
	release(e, prog, cl, exitRelease(id, rc))
	return rc
}

// ringBell rings the terminal as salloc does when the allocation is
// granted: with --bell always, by default after a wait of over ten
// seconds, with --no-bell never; and only when its output is a terminal.
func ringBell(e *Env, bell string, waited time.Duration) {
	if bell == "no-bell" || (bell == "" && waited <= 10*time.Second) {
		return
	}
	if f, ok := e.Stdout.(*os.File); ok {
		if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			_, _ = f.WriteString("\a")
		}
	}
}

// envValue is a variable's value in an environment list.
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if len(env[i]) > len(name) && env[i][len(name)] == '=' && env[i][:len(name)] == name {
			return env[i][len(name)+1:]
		}
	}
	return ""
}
