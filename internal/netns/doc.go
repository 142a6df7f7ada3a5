// Package netns is the namespace plumbing that the lab of `hpc up --netns`
// (commands) and the fault harness (internal/faultnet) share: namespaces
// held by processes, found again by a tag, joined to a bridge by veth
// pairs, entered by programs, and removed with everything running in them.
//
// A namespace is held by a process of its own (Hold: a shell that sleeps,
// started by util-linux's unshare, whose first argument is the caller's
// tag), never by a name under /run/netns: the steps of a lab's daemons
// bind the host's /run recursively, and a copy of such a mount in a
// step's root keeps the name from being removed (EBUSY) until that step
// ends. Holders finds the holders again by their tag, so a later process
// (hpc down, the next test run) can remove what an earlier one made:
// Remove kills every process in the holders' network namespaces, holders
// last, and the namespaces, their veth pairs and bridges go with them.
//
// A holder always has a network namespace of its own; with a host name it
// has a UTS namespace too, and with a hosts file a mount namespace (a
// slave of the caller's, so mounts made on the host later still show
// inside) with that file bound on /etc/hosts. Enter and Command run
// programs inside a holder's namespaces through nsenter; IP, Bridge and
// Join drive iproute2's ip inside them.
//
// It imports nothing of the project.
package netns
