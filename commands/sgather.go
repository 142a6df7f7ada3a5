package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"hpc/cluster/api"
	"hpc/cluster/jobspec"
)

var sgatherOpts = sync.OnceValue(func() *jobspec.Getopt {
	return opts("compress,C", "force,f", "fanout,F,:", "jobid,j,:", "keep,k", "preserve,p",
		"recursive,r", "timeout,t,:", "verbose,v", "version,V", "help,h", "usage")
})

const sgatherUsage = "Usage: sgather [-CfFjkprtvV] SOURCE DEST\n"

const sgatherHelp = `Usage: sgather [OPTIONS] SOURCE DEST
  -C, --compress         accepted; hpc sends files as they are
  -f, --force            a node without SOURCE is not an error
  -F, --fanout=num       how many nodes are read at once
  -j, --jobid=#          the job whose nodes are read (default:
                         SLURM_JOB_ID)
  -k, --keep             leave SOURCE on the nodes (it is removed otherwise)
  -p, --preserve         give the copies the source's times
  -r, --recursive        accepted; only files are gathered
  -t, --timeout=secs     accepted
  -v, --verbose          say what is being done
  -V, --version          show the Slurm version hpc follows

Help options:
  --help                show this help
  --usage               show a short usage line
`

// sgatherMain is sgather: SOURCE of every node of the caller's running
// job copied to DEST.<node> here (written by this process, as the caller),
// and removed there unless -k.
func sgatherMain(e *Env, prog string, args []string) int {
	var force, preserve, keep bool
	fanout, verbose, jobFlag := 8, 0, ""
	fileCopyEnv(e, "SGATHER", &force, &preserve, &fanout)
	if _, ok := e.LookupEnv("SGATHER_KEEP"); ok {
		keep = true
	}
	rest, code, done := parseOpts(e, prog, sgatherOpts(), args, func(o *jobspec.Opt, val string, has bool) error {
		switch o.ID() {
		case "f":
			force = true
		case "p":
			preserve = true
		case "k":
			keep = true
		case "F":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				fmt.Fprintf(e.Stderr, "%s: invalid fanout -- '%s'\n", prog, val)
				fmt.Fprintln(e.Stderr, jobspec.TryHelp(prog))
				return quit{1}
			}
			fanout = n
		case "j":
			jobFlag = val
		case "v":
			verbose++
		case "C", "r", "t":
		case "h":
			io.WriteString(e.Stdout, sgatherHelp)
			return quit{0}
		default:
			if handled, err := helpOrVersion(e, o.ID(), sgatherHelp, sgatherUsage); handled {
				return err
			}
		}
		return nil
	})
	if done {
		return code
	}
	job, ok := fileCopyArgs(e, prog, rest, jobFlag, "Command only valid from within Slurm job")
	if !ok {
		return 1
	}
	src, dest := absPath(e, rest[0]), absPath(e, rest[1])
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
	failed := forNodes(fj.Nodes, fanout, func(node string) error {
		body, info, err := cl.GetFile(ctx, job, node, src, false)
		if err != nil {
			if force && strings.Contains(err.Error(), "No such file") {
				if verbose > 0 {
					fmt.Fprintf(e.Stderr, "%s(%s): %s ignored\n", prog, node, src)
				}
				return nil
			}
			return fmt.Errorf("Can't open %s: %s", src, err.Error())
		}
		err = writeGathered(dest+"."+node, body, info, preserve)
		body.Close()
		if err != nil {
			return fmt.Errorf("%s.%s: %s", dest, node, strerror(err))
		}
		if verbose > 0 {
			fmt.Fprintf(e.Stderr, "%s(%s): %s copied to %s.%s\n", prog, node, src, dest, node)
		}
		if !keep {
			if _, _, err := cl.GetFile(ctx, job, node, src, true); err != nil {
				return fmt.Errorf("removing %s: %s", src, err.Error())
			}
		}
		return nil
	}, func(node string, err error) {
		fmt.Fprintf(e.Stderr, "%s(%s): error: %s\n", prog, node, err.Error())
	})
	if failed {
		return 1
	}
	return 0
}

// writeGathered writes what a node sent into path, through a new file
// next to it renamed into place: the source's permission bits, and its
// times with preserve. It fails if fewer bytes came than the file held.
func writeGathered(path string, body io.Reader, info api.FileInfo, preserve bool) error {
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".sgather.")
	if err != nil {
		return err
	}
	n, err := io.Copy(tmp, body)
	if err == nil && n != info.Size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil {
		err = tmp.Chmod(os.FileMode(info.Mode & 0o777))
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil && preserve {
		err = os.Chtimes(tmp.Name(), info.Atime, info.Mtime)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
