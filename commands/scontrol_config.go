package commands

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"hpc/cluster/api"
	"hpc/commands/format"
)

// scontrol reconfigure, write config and pidinfo, as Slurm 22.05's.

// reconfigure is scontrol reconfigure: every controller re-reads slurm.conf
// (the leader reads it and commits it through Raft).
func (s *scontrol) reconfigure(argv []string) {
	if len(argv) > 1 { // Slurm says so and goes on
		s.fail("too many arguments for keyword:%s\n", argv[0])
	}
	cl, ctx, cancel, err := connect(s.e)
	if err == nil {
		defer cancel()
		err = cl.Reconfigure(ctx)
	}
	if err != nil {
		s.status = 1
		if !s.quiet {
			s.perror("slurm_reconfigure error", err)
		}
	}
}

// writeConfig is scontrol write config [FILE]: the running configuration
// (scontrol's partition changes included) into FILE.<time>, by default
// next to slurm.conf ($SLURM_CONF_OUT, else $SLURM_CONF, else the
// daemon's slurm.conf).
func (s *scontrol) writeConfig(argv []string) {
	if len(argv) > 3 {
		s.fail("too many arguments for keyword:%s\n", argv[0])
		return
	}
	served, err := s.loadConfig()
	if err != nil {
		s.loadErr("slurm_load_ctl_conf error", err)
		return
	}
	cl, ctx, cancel, err := connect(s.e)
	var file *api.ConfigFile
	if err == nil {
		defer cancel()
		file, err = cl.ConfigFile(ctx)
	}
	if err != nil {
		s.loadErr("slurm_load_partitions error", err)
		return
	}
	base := ""
	switch {
	case len(argv) == 3:
		base = argv[2]
	case s.e.Getenv("SLURM_CONF_OUT") != "":
		base = s.e.Getenv("SLURM_CONF_OUT")
	case s.e.Getenv("SLURM_CONF") != "":
		base = s.e.Getenv("SLURM_CONF")
	default:
		base = served.SlurmConf
	}
	stamp := file.LastUpdate
	if stamp.IsZero() {
		stamp = s.e.Now()
	}
	path := base + "." + format.ISOTime(stamp)
	full := path
	if !filepath.IsAbs(full) {
		full = filepath.Join(s.e.Cwd, full)
	}
	text := "#\n# slurm.conf file written by scontrol write config\n# " + stamp.Local().Format(time.ANSIC) + "\n#\n" + file.Text
	if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
		s.fail("Could not create file %s: %s\n", path, strerror(err))
		return
	}
	fmt.Fprintf(s.e.Stdout, "Slurm config saved to %s\n", path)
}

// pidinfo is scontrol pidinfo PID: the job of a process of this node and
// when that job ends.
func (s *scontrol) pidinfo(argv []string) {
	switch {
	case len(argv) > 2:
		s.fail("too many arguments for keyword:%s\n", argv[0])
		return
	case len(argv) < 2:
		s.fail("missing argument for keyword:%s\n", argv[0])
		return
	}
	pid, _ := strconv.Atoi(leadingDigits(argv[1]))
	cl, ctx, cancel, err := connect(s.e)
	var info *api.PidInfo
	if err == nil {
		defer cancel()
		info, err = cl.PidInfo(ctx, pid)
	}
	if err != nil {
		s.status = 1
		if !s.quiet {
			fmt.Fprintln(s.e.Stderr, "Failed to locate job for requested pid")
		}
		return
	}
	var job *api.Job
	jobs, err := cl.Jobs(ctx)
	for i := range jobs {
		if jobs[i].ID == info.JobID {
			job = &jobs[i]
		}
	}
	if err == nil && job == nil {
		err = &api.Error{Message: api.ErrInvalidJobID}
	}
	if err != nil {
		s.status = 1
		if !s.quiet {
			s.perror("Failed to get job end time", err)
		}
		return
	}
	end := jobEndTime(job)
	fmt.Fprintf(s.e.Stdout, "Slurm JobId=%d ends at %s\n", info.JobID, end.Local().Format("Mon Jan 02 15:04:05 2006"))
	rem := int64(end.Sub(s.e.Now()) / time.Second)
	fmt.Fprintf(s.e.Stdout, "Job remaining time is %d seconds\n", max(rem, 0))
}

// jobEndTime is when a job's time ends, as slurmctld keeps it: its start
// plus its limit; a year after the start without one.
func jobEndTime(j *api.Job) time.Time {
	if !j.EndTime.IsZero() && j.State != api.StateRunning {
		return j.EndTime
	}
	if j.Spec.TimeLimitMin > 0 {
		return j.StartTime.Add(time.Duration(j.Spec.TimeLimitMin) * time.Minute)
	}
	return j.StartTime.Add(365 * 24 * time.Hour)
}
