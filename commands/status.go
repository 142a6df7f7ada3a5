package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/cluster/api"
	"hpc/cluster/config"
	"hpc/commands/format"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:            "status",
		Usage:           "show the leader, each controller's Raft role and health, and the gossip members",
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl, err := client(ctx)
			if err != nil {
				return statusFailed(err)
			}
			st, err := cl.Status(ctx)
			if err != nil {
				return statusFailed(err)
			}
			leader := st.Leader
			if leader == "" {
				leader = "(none: election in progress)"
			}
			fmt.Printf("Node:     %s (%s)\n", st.Node, st.RaftState)
			fmt.Printf("Leader:   %s  term %d  commit %d  applied %d\n", leader, st.Term, st.CommitIndex, st.AppliedIdx)
			fmt.Printf("Voters:   %s\n", strings.Join(st.Voters, ", "))
			fmt.Printf("Steps:    %s\n", st.ExecMode)
			if err := printControllers(st.Controllers); err != nil {
				return err
			}
			fmt.Println("Members:")
			tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  NAME\tADDRESS\tSTATE\tSTEPS RUN AS")
			for _, m := range st.Members {
				mode := m.ExecMode
				if mode == "" {
					mode = "-"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", m.Name, m.Addr, m.State, mode)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if a, ok := localStorage(); ok {
				fmt.Println()
				printStorage(a)
			}
			return nil
		},
	}
}

// localStorage finds the storage areas of the lab on this machine whose
// nodes the commands talk to (the first lab directory with node sockets).
func localStorage() (config.Storage, bool) {
	if os.Getenv("HPC_SOCKET") != "" {
		return config.Storage{}, false
	}
	for _, dir := range clientDirs() {
		if len(sockets(dir)) == 0 {
			continue
		}
		cfg, err := config.Load(filepath.Join(dir, "slurm.conf"))
		if err != nil {
			return config.Storage{}, false
		}
		return cfg.Storage(dir), true
	}
	return config.Storage{}, false
}

func statusFailed(err error) error {
	detail, msg := errText(err)
	if detail != "" {
		msg += ": " + detail
	}
	fmt.Fprintf(os.Stderr, "hpc: error: %s\n", msg)
	return exit(1)
}

// printControllers is hpc status's table of the controllers, each as it
// answers for itself: Raft's role (leader, follower, candidate, or down
// when it does not answer), its term and indexes, and when a follower last
// heard from the leader. SLURMCTLD is the name scontrol ping gives it:
// Slurm calls the first SlurmctldHost the primary whichever one leads.
func printControllers(states []api.ControllerState) error {
	if len(states) == 0 {
		return nil
	}
	fmt.Println("Controllers:")
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tSLURMCTLD\tROLE\tVOTER\tTERM\tCOMMIT\tAPPLIED\tLAST CONTACT\tNOTE")
	ping := pingControllers(states)
	for _, c := range states {
		slurm := "-"
		for i, p := range ping {
			if p.Name == c.Name {
				slurm = format.PingMode(i, len(ping))
			}
		}
		voter := "no"
		if c.Voter {
			voter = "yes"
		}
		num := func(v uint64) string {
			if c.Role == api.RoleDown {
				return "-"
			}
			return strconv.FormatUint(v, 10)
		}
		contact := "-"
		if !c.LastContact.IsZero() {
			contact = time.Since(c.LastContact).Round(time.Millisecond).String() + " ago"
		}
		var notes []string
		if c.Dedicated {
			notes = append(notes, "controller only")
		}
		if c.Error != "" {
			notes = append(notes, c.Error)
		}
		note := strings.Join(notes, "; ")
		if note == "" {
			note = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, slurm, c.Role, voter, num(c.Term), num(c.CommitIndex), num(c.AppliedIndex), contact, note)
	}
	return tw.Flush()
}
