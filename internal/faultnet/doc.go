// Package faultnet puts the nodes of a test cluster on a network of their
// own and breaks it on request. As root, New makes a hub network namespace
// holding a Linux bridge and one namespace per node, joined to the bridge
// by a veth pair, with the node's own address (10.<subnet>.0.<i>/24) and
// its loopback up. Command and Start run programs inside a node's
// namespace; the faults, each with its restore, are Kill9 (then Restart),
// Freeze/Thaw (SIGSTOP/SIGCONT), Cut/Restore (the node's link down and up,
// on the hub's side) and Partition/Heal (the minority's ports moved to a
// second bridge, so they reach one another but not the rest).
//
// The addresses exist only inside these namespaces, so nothing on the host
// and no other test's network can meet them. Each namespace is held by a
// process of its own (no name under /run/netns, which a lab's steps would
// copy into their roots and so pin), tagged with the caller's prefix; a
// lock file per prefix, held while the set lives, tells a set whose owner
// died (cleaned by the next New of that prefix) from one in use (waited
// for). Close kills what runs in the namespaces, and they go with it.
//
// Its namespaces, bridges and veth pairs are internal/netns's (which drives
// iproute2's ip and util-linux's unshare and nsenter), shared with the lab
// of hpc up --netns; it imports nothing else of the project.
package faultnet
