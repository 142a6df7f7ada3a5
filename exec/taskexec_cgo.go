//go:build linux && cgo

package exec

// The task wrapper ("<exe> init hpc-task-exec <setup> argv...", taskexec.go)
// is this C constructor: it runs before the Go runtime starts, when the
// program is started as the wrapper, does the setup and execs the task's
// program, so a task starts without a second Go runtime's start (several
// milliseconds, the runtime and every package's init, per task). glibc
// hands a constructor the program's arguments and environment.
//
// The setup is a list of fields separated by commas (taskSetup.encode):
// u<umask>, r<resource>:<soft limit>, p<variable>, numbers in decimal.
// A failure is written to fd 3, the report pipe, as slurmstepd words it
// ("execve(): prog: No such file or directory"); a successful exec closes
// that pipe (close-on-exec).

/*
#cgo CFLAGS: -Wall
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef __GLIBC__
static void hpc_task_fail(const char *msg, const char *what, int err) {
	char buf[4096];
	int n;
	if (err) {
		const char *s = strerror(err);
		n = snprintf(buf, sizeof buf, "%s%s: %s", msg, what, s);
	} else {
		n = snprintf(buf, sizeof buf, "%s%s", msg, what);
	}
	if (n > (int)sizeof buf - 1) n = sizeof buf - 1;
	if (n > 0 && write(3, buf, n) < 0) {}
	_exit(1);
}

// hpc_task_setup applies a setup; it returns the pid variable's name (a
// pointer into setup, cut at its end) or NULL.
static char *hpc_task_setup(char *setup) {
	char *pidenv = NULL;
	char *f = setup;
	while (f && *f) {
		char *next = strchr(f, ',');
		if (next) *next++ = '\0';
		char *end = NULL;
		errno = 0;
		switch (f[0]) {
		case 'u': {
			unsigned long m = strtoul(f + 1, &end, 10);
			if (errno || end == f + 1 || *end || m > 0777) hpc_task_fail("bad task setup: ", f, 0);
			umask((mode_t)m);
			break;
		}
		case 'r': {
			unsigned long res = strtoul(f + 1, &end, 10);
			if (errno || end == f + 1 || *end != ':') hpc_task_fail("bad task setup: ", f, 0);
			char *v = end + 1;
			unsigned long long soft = strtoull(v, &end, 10);
			if (errno || end == v || *end) hpc_task_fail("bad task setup: ", f, 0);
			struct rlimit r;
			// A soft limit goes no higher than the hard one, which stays;
			// one that cannot be set is left as it is.
			if (getrlimit((int)res, &r) == 0) {
				r.rlim_cur = soft < r.rlim_max ? soft : r.rlim_max;
				setrlimit((int)res, &r);
			}
			break;
		}
		case 'p':
			if (!f[1] || strchr(f + 1, '=')) hpc_task_fail("bad task setup: ", f, 0);
			pidenv = f + 1;
			break;
		default:
			hpc_task_fail("bad task setup: ", f, 0);
		}
		f = next;
	}
	return pidenv;
}

// hpc_task_env is envp without name's variable, with name=pid last.
static char **hpc_task_env(char **envp, const char *name) {
	size_t n = 0, len = strlen(name);
	while (envp[n]) n++;
	char **out = malloc((n + 2) * sizeof *out);
	char *kv = malloc(len + 24);
	if (!out || !kv) hpc_task_fail("execve(): ", "out of memory", 0);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=') continue;
		out[j++] = envp[i];
	}
	snprintf(kv, len + 24, "%s=%ld", name, (long)getpid());
	out[j++] = kv;
	out[j] = NULL;
	return out;
}

__attribute__((constructor)) static void hpc_task_exec(int argc, char **argv, char **envp) {
	if (argc < 5 || strcmp(argv[1], "init") != 0 || strcmp(argv[2], "hpc-task-exec") != 0) return;
	fcntl(3, F_SETFD, FD_CLOEXEC);
	char *pidenv = hpc_task_setup(argv[3]);
	char **env = pidenv ? hpc_task_env(envp, pidenv) : envp;
	execve(argv[4], argv + 4, env);
	hpc_task_fail("execve(): ", argv[4], errno);
}
#endif
*/
import "C"
