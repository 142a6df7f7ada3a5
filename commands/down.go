package commands

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"hpc/internal/netns"
)

func downCommand() *cli.Command {
	return &cli.Command{
		Name:  "down",
		Usage: "stop the lab's node daemons and remove the namespaces of a --netns lab (state is kept unless --purge)",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "lab directory (default as for up)"},
			&cli.BoolFlag{Name: "purge", Usage: "also remove the lab directory: jobs, accounting, logs, config"},
		},
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			dir := c.String("dir")
			if dir == "" {
				dir = labDir()
			}
			dir, _ = filepath.Abs(dir)
			l := lab{dir: dir}
			stopped := stopLab(l)
			if len(stopped) == 0 {
				fmt.Printf("No node of the lab in %s is running.\n", dir)
			} else {
				fmt.Printf("Stopped %d node(s): %v\n", len(stopped), stopped)
			}
			if err := downNet(l); err != nil {
				return cli.Exit("hpc: error: removing the lab's namespaces: "+err.Error(), 1)
			}
			if c.Bool("purge") {
				if err := os.RemoveAll(dir); err != nil {
					return cli.Exit("hpc: error: "+err.Error(), 1)
				}
				fmt.Printf("Removed %s\n", dir)
			}
			return nil
		},
	}
}

// downNet removes the namespaces of a --netns lab, with whatever still
// runs in them (login shells, say), once its daemons are stopped.
func downNet(l lab) error {
	holders, err := netns.Holders(l.netTag(""))
	if err != nil || len(holders) == 0 {
		return err
	}
	if os.Geteuid() != 0 {
		return errors.New("the namespaces are root's: run hpc down as root")
	}
	hosts := 0
	for tag := range holders {
		if strings.HasPrefix(tag, l.netTag("host:")) {
			hosts++
		}
	}
	if err := removeNet(l); err != nil {
		return err
	}
	fmt.Printf("Removed the lab's namespaces (%d hosts, and the hub with its bridge and %s)\n", hosts, labHostLink)
	return nil
}

// stopLab stops every running daemon of the lab with its jobs: SIGINT,
// then SIGKILL after 15 seconds. (SIGTERM would leave the jobs running for
// the next daemon to re-attach, as stopping slurmd does.)
func stopLab(l lab) []string { return stopNodes(l, l.nodes()) }

// stopNodes stops the named nodes' daemons that are running.
func stopNodes(l lab, nodes []string) []string {
	var stopped []string
	pids := map[string]int{}
	for _, n := range nodes {
		if pid, ok := l.running(n); ok {
			_ = syscall.Kill(pid, syscall.SIGINT)
			pids[n] = pid
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for n, pid := range pids {
		for {
			if _, ok := l.running(n); !ok {
				break
			}
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				time.Sleep(100 * time.Millisecond)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = os.Remove(l.pidPath(n))
		stopped = append(stopped, n)
	}
	return stopped
}
