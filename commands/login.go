package commands

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"hpc/cluster/config"
	"hpc/internal/netns"
)

// loginCommand is `hpc login`: a shell on the login node of a --netns
// lab, as ssh to a cluster's login node gives one.
func loginCommand() *cli.Command {
	return &cli.Command{
		Name:  "login",
		Usage: "open a shell on the lab's login node (hpc up --netns), as you, with the Slurm commands on PATH",
		Description: "The shell runs in the login node's network, UTS and mount namespaces: its host\n" +
			"name, its address and the lab's /etc/hosts. The Slurm commands run there talk to\n" +
			"the login node's daemon, which forwards them to the controllers over the lab's\n" +
			"network, so jobs submitted there show it as their submit host. Entering the\n" +
			"namespaces needs root: run it with sudo, and the shell is the sudo user's.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "lab directory (default as for up)"},
			&cli.StringFlag{Name: "host", Usage: "the login node (default: the config's first HpcSubmitHost)"},
			&cli.StringFlag{Name: "command", Aliases: []string{"c"}, Usage: "run this command line in the user's shell there, and exit with its status"},
			&cli.StringFlag{Name: "user", Aliases: []string{"u"}, Usage: "log in as this user (default: the sudo user, else the caller)"},
		},
		HideHelpCommand: true,
		Action:          runLogin,
	}
}

func runLogin(c *cli.Context) error {
	dir := c.String("dir")
	if dir == "" {
		dir = labDir()
	}
	dir, _ = filepath.Abs(dir)
	l := lab{dir: dir}
	argv, env, err := loginArgs(l, c.String("host"), c.String("user"), c.String("command"))
	if err != nil {
		return cli.Exit("hpc login: error: "+err.Error(), 1)
	}
	// The shell takes this process's place: its terminal, signals and
	// exit status are the caller's.
	if err := syscall.Exec(argv[0], argv, env); err != nil {
		return cli.Exit("hpc login: error: "+argv[0]+": "+err.Error(), 1)
	}
	return nil
}

// loginArgs is the command line (nsenter's, its path first) and the
// environment of a shell on host of lab l as user ("" for the caller),
// running command when it is not "".
func loginArgs(l lab, host, name, command string) ([]string, []string, error) {
	cfg, err := config.LoadAll(l.confPath())
	if err != nil {
		return nil, nil, fmt.Errorf("no lab in %s (%v)", l.dir, err)
	}
	if !l.isNetns() {
		return nil, nil, fmt.Errorf("the lab in %s runs without namespaces: its hosts share this machine's network, so the Slurm commands work from here (hpc up --netns makes a lab with a login node)", l.dir)
	}
	if host == "" {
		if len(cfg.SubmitHosts) == 0 {
			return nil, nil, fmt.Errorf("the lab in %s has no login node (hpc up --netns makes a lab with one)", l.dir)
		}
		host = cfg.SubmitHosts[0].Name
	}
	if _, ok := cfg.HostAddr(host); !ok {
		return nil, nil, fmt.Errorf("%s is not a host of the lab in %s", host, l.dir)
	}
	if os.Geteuid() != 0 {
		return nil, nil, fmt.Errorf("entering %s's namespaces needs root: run `sudo hpc login` (the shell is then yours)", host)
	}
	holders, err := netHolders(l)
	if err != nil {
		return nil, nil, err
	}
	pid, ok := holders[host]
	if !ok {
		return nil, nil, fmt.Errorf("%s is not up (its namespaces are gone): start the lab with hpc up", host)
	}
	u, err := loginUser(name)
	if err != nil {
		return nil, nil, err
	}
	links, err := ensureLinks(l)
	if err != nil {
		return nil, nil, err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		cwd = u.HomeDir
	}
	enter, err := netns.EnterArgs(pid, hostKinds)
	if err != nil {
		return nil, nil, err
	}
	argv := append(append([]string{nsenter}, enter...), "--wd="+cwd, "--")
	if u.Uid != "0" {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			return nil, nil, err
		}
		argv = append(argv, setpriv, "--reuid="+u.Uid, "--regid="+u.Gid, "--init-groups", "--")
	}
	shell := loginShell(u)
	argv = append(argv, shell)
	if command != "" {
		argv = append(argv, "-c", command)
	}
	return argv, loginEnv(os.Environ(), l, host, links, u, shell), nil
}

// loginUser is the user the shell runs as: name when given, else the user
// sudo ran hpc for, else the caller.
func loginUser(name string) (*user.User, error) {
	switch {
	case name != "":
		u, err := user.Lookup(name)
		if err != nil {
			if u, err2 := user.LookupId(name); err2 == nil {
				return u, nil
			}
		}
		return u, err
	case os.Getenv("SUDO_UID") != "":
		return user.LookupId(os.Getenv("SUDO_UID"))
	}
	return user.LookupId(strconv.Itoa(os.Getuid()))
}

// loginShell is u's login shell from the password file, /bin/sh when it
// has none or one that refuses logins (nologin, false).
func loginShell(u *user.User) string {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return "/bin/sh"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) == 7 && fields[0] == u.Username && fields[2] == u.Uid {
			sh := fields[6]
			if sh == "" || strings.HasSuffix(sh, "nologin") || strings.HasSuffix(sh, "false") {
				return "/bin/sh"
			}
			return sh
		}
	}
	return "/bin/sh"
}

// loginEnv is the shell's environment: the caller's, with the user's
// HOME, USER, LOGNAME and SHELL, the Slurm commands first on PATH, and the
// login node's daemon as the one the commands talk to.
func loginEnv(environ []string, l lab, host, links string, u *user.User, shell string) []string {
	set := map[string]string{
		"HOME": u.HomeDir, "USER": u.Username, "LOGNAME": u.Username, "SHELL": shell,
		"HPC_DIR": l.dir, "HPC_SOCKET": l.sockPath(host),
	}
	path := links
	var out []string
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" && v != "" {
			path = links + ":" + v
		}
		if _, ours := set[k]; ours || k == "PATH" {
			continue
		}
		out = append(out, kv)
	}
	if path == links {
		path += ":/usr/local/bin:/usr/bin:/bin"
	}
	out = append(out, "PATH="+path)
	for _, k := range []string{"HOME", "USER", "LOGNAME", "SHELL", "HPC_DIR", "HPC_SOCKET"} {
		out = append(out, k+"="+set[k])
	}
	return out
}

// ensureLinks makes the Slurm-named links to this binary in the lab's
// netns/bin (what the login shell's PATH begins with) and returns it.
func ensureLinks(l lab) (string, error) {
	e := ProcessEnv()
	e.Stdout, e.Stderr = io.Discard, io.Discard
	if installLinks(e, l.linksDir()) != 0 {
		return "", errors.New("could not make the Slurm commands' links in " + l.linksDir())
	}
	// hpc itself too (hpc status, hpc queue, ...).
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", err
	}
	link := filepath.Join(l.linksDir(), "hpc")
	if state, err := linkState(link, exe); err != nil || state == linkForeign {
		return "", fmt.Errorf("%s: not a link to %s (%v)", link, exe, err)
	} else if state != linkOurs {
		os.Remove(link)
		if err := os.Symlink(exe, link); err != nil {
			return "", err
		}
	}
	return l.linksDir(), nil
}
