package api

import (
	"net/http"
	"time"
)

// NewInProcessClient returns a client whose requests go to rt instead of
// a socket: the daemon's own routes, called in its process. The daemon's
// REST API uses one so that a REST request takes the same route, with the
// same identity, as the same user's request on the socket. name stands
// for the socket in error texts.
func NewInProcessClient(name string, rt http.RoundTripper) *Client {
	return &Client{Socket: name, hc: &http.Client{Transport: rt, Timeout: 60 * time.Second}}
}
