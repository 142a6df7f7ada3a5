// Package api holds what crosses the wire between the hpc command line and
// the node daemons, and between daemons: the job, node, partition, step and
// accounting records as clients see them, the request and response types
// of the HTTP/JSON API, Slurm's error texts, and the Client that talks to a
// node over its unix socket. It imports only the standard library, so
// every other package may use it.
package api
