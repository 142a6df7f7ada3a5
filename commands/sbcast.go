package commands

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sbcastOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("compress,C,::", "exclude,,:", "fanout,F,:", "force,f", "jobid,j,:", "send-libs,,::",
		"preserve,p", "size,s,:", "timeout,t,:", "verbose,v", "version,V", "help", "usage")
})

const sbcastUsage = "Usage: sbcast [--exclude] [-CfFjpstvV] [--send-libs] SOURCE DEST\n"

const sbcastHelp = `Usage: sbcast [OPTIONS] SOURCE DEST
  -C, --compress[=lib]  accepted; hpc sends files as they are
  --exclude=<path_list> accepted (shared objects are not sent)
  -f, --force           replace DEST where it exists
  -F, --fanout=num      how many nodes are sent the file at once
  -j, --jobid=#[.#]     the job whose nodes get the file (default:
                        SLURM_JOB_ID)
  -p, --preserve        give DEST the source's mode and times
  --send-libs[=yes|no]  accepted (shared objects are not sent)
  -s, --size=num        accepted (hpc picks its own block size)
  -t, --timeout=secs    accepted
  -v, --verbose         say what is being done
  -V, --version         show the Slurm version hpc follows

Help options:
  --help                show this help
  --usage               show a short usage line
`

// fileCopyJob is the job sbcast and sgather work in: -j's (a step or
// het offset after it is ignored), else SLURM_JOB_ID; 0 if neither.
func fileCopyJob(e *Env, flag string) uint64 {
	s := flag
	if s == "" {
		s = e.Getenv("SLURM_JOB_ID")
	}
	s, _, _ = strings.Cut(s, ".")
	s, _, _ = strings.Cut(s, "+")
	id, _ := strconv.ParseUint(s, 10, 64)
	return id
}

// fileCopyArgs checks what sbcast and sgather take after their options,
// two file names, and finds their job (fileCopyJob); noJob is the
// command's error without one. False: the error is printed.
func fileCopyArgs(e *Env, prog string, rest []string, jobFlag, noJob string) (uint64, bool) {
	if len(rest) != 2 {
		fmt.Fprintf(e.Stderr, "Need two file names, have %d names\n", len(rest))
		fmt.Fprintln(e.Stderr, jobspec.TryHelp(prog))
		return 0, false
	}
	job := fileCopyJob(e, jobFlag)
	if job == 0 {
		e.errorf(prog, "%s", noJob)
		return 0, false
	}
	return job, true
}

// absPath is p from the command's working directory.
func absPath(e *Env, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return strings.TrimSuffix(e.Cwd, "/") + "/" + p
}

// fileCopyEnv reads the options sbcast and sgather share from the
// environment: SBCAST_*/SGATHER_* set force, preserve and fanout.
func fileCopyEnv(e *Env, prefix string, force, preserve *bool, fanout *int) {
	if _, ok := e.LookupEnv(prefix + "_FORCE"); ok {
		*force = true
	}
	if _, ok := e.LookupEnv(prefix + "_PRESERVE"); ok {
		*preserve = true
	}
	if n, err := strconv.Atoi(e.Getenv(prefix + "_FANOUT")); err == nil && n > 0 {
		*fanout = n
	}
}

// sbcastMain is sbcast: SOURCE copied to DEST on every node of the
// caller's running job, written there as the job's owner.
func sbcastMain(e *Env, prog string, args []string) int {
	var force, preserve bool
	fanout, verbose, jobFlag := 8, 0, ""
	fileCopyEnv(e, "SBCAST", &force, &preserve, &fanout)
	rest, code, done := parseOpts(e, prog, sbcastOpts(), args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "f":
			force = true
		case "p":
			preserve = true
		case "F":
			if n, err := strconv.Atoi(val); err == nil && n > 0 {
				fanout = n
			}
		case "j":
			jobFlag = val
		case "v":
			verbose++
		case "C", "exclude", "send-libs", "s", "t":
		default:
			if handled, err := helpOrVersion(e, o.ID(), sbcastHelp, sbcastUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
	job, ok := fileCopyArgs(e, prog, rest, jobFlag, "Need a job id to run this command.  Run from within a Slurm job or use the --jobid option.")
	if !ok {
		return 1
	}
	src, dest := rest[0], absPath(e, rest[1])
	if strings.HasSuffix(dest, "/") {
		e.errorf(prog, "Target filename cannot be a directory.")
		return 1
	}
	info, code, ok := sbcastSource(e, prog, src)
	if !ok {
		return code
	}
	cl, ctx, cancel, err := connect(e)
	if err != nil {
		e.errorf(prog, "%v", err)
		return 1
	}
	defer cancel()
	fj, err := cl.FileJob(ctx, job)
	if err != nil {
		e.errorf(prog, "Slurm job %d lookup error: %s", job, err.Error())
		return 1
	}
	if verbose > 0 {
		fmt.Fprintf(e.Stderr, "%s: jobid      = %d\n%s: node_list  = %s\n", prog, job, prog, strings.Join(fj.Nodes, ","))
	}
	failed := forNodes(fj.Nodes, fanout, func(node string) error {
		f, err := os.Open(absPath(e, src))
		if err != nil {
			return err
		}
		defer f.Close()
		return cl.PutFile(ctx, api.PutFile{JobID: job, Node: node, Path: dest, Force: force, Preserve: preserve, Info: info}, f)
	}, func(node string, err error) {
		e.errorf(prog, "REQUEST_FILE_BCAST(%s): %s", node, err.Error())
	})
	if failed {
		return 1
	}
	return 0
}

// sbcastSource checks SOURCE and reads its mode and times.
func sbcastSource(e *Env, prog, src string) (api.FileInfo, int, bool) {
	var info api.FileInfo
	f, err := os.Open(absPath(e, src))
	if err != nil {
		e.errorf(prog, "Can't open `%s`: %s", src, strerror(err))
		return info, 1, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		e.errorf(prog, "Can't stat `%s`: %s", src, strerror(err))
		return info, 1, false
	}
	if fi.IsDir() {
		e.errorf(prog, "Can't open `%s`: %s", src, strerror(syscall.EISDIR))
		return info, 1, false
	}
	info = api.FileInfo{Size: fi.Size(), Mode: uint32(fi.Mode().Perm()), Mtime: fi.ModTime(), Atime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		info.Atime = time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	if info.Size == 0 {
		e.errorf(prog, "Warning: file `%s` is empty.", src)
	}
	return info, 0, true
}

// forNodes runs fn for every node, fanout at a time, reports each
// failure in node order, and says whether any failed.
func forNodes(nodes []string, fanout int, fn func(node string) error, report func(node string, err error)) bool {
	errs := make([]error, len(nodes))
	sem := make(chan struct{}, max(fanout, 1))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = fn(n)
		})
	}
	wg.Wait()
	failed := false
	for i, err := range errs {
		if err != nil {
			report(nodes[i], err)
			failed = true
		}
	}
	return failed
}
