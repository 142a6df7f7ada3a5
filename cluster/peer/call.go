package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/config"
)

// Caller makes signed requests to the nodes' APIs, over TLS with this
// node's certificate.
type Caller struct {
	Key    []byte         // the cluster key
	Config *config.Config // where the nodes are
	// HTTP makes calls that answer within 30 s; Stream, calls whose
	// answer streams for as long as a step runs.
	HTTP, Stream *http.Client
}

// NewCaller returns the caller of a node with these credentials.
func NewCaller(key []byte, cfg *config.Config, creds *Credentials) *Caller {
	tr := &http.Transport{
		TLSClientConfig:     creds.ClientConfig(),
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	return &Caller{Key: key, Config: cfg,
		HTTP:   &http.Client{Timeout: 30 * time.Second, Transport: tr},
		Stream: &http.Client{Transport: tr}}
}

// URL is the address of path on the API at addr.
func URL(addr, path string) string { return "https://" + addr + path }

// API is a node's API address.
func (c *Caller) API(name string) (string, error) {
	n := c.Config.Node(name)
	if n == nil {
		return "", fmt.Errorf("unknown node %s", name)
	}
	return net.JoinHostPort(n.Addr, strconv.Itoa(c.Config.APIPort)), nil
}

// Call posts in to path on the API at addr, signed as coming from id, and
// decodes the answer into out (nil: the answer is dropped).
func (c *Caller) Call(ctx context.Context, id Identity, addr, path string, in, out any) error {
	resp, err := c.Post(ctx, id, addr, path, in, c.HTTP)
	if err != nil {
		return err
	}
	defer DrainClose(resp.Body)
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// DrainClose reads what is left of an answer (one dropped unread, or the
// rest after a JSON decoder's value), up to 64 KiB, then closes it: an
// answer not read to its end closes its connection rather than giving it
// back to the pool, and the next call paid a new TLS handshake (two for
// each job a node ran).
func DrainClose(body io.ReadCloser) {
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	body.Close()
}

// CallNode is Call on behalf of no user: a node-to-node request.
func (c *Caller) CallNode(ctx context.Context, addr, path string, in, out any) error {
	return c.Call(ctx, Identity{Node: true}, addr, path, in, out)
}

// Post sends a signed POST through hc and returns the answer if its status
// is 200; otherwise the API's error.
func (c *Caller) Post(ctx context.Context, id Identity, addr, path string, in any, hc *http.Client) (*http.Response, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, URL(addr, path), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	Sign(c.Key, req, id, body)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer DrainClose(resp.Body)
		var e api.Error
		if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Message != "" {
			return nil, &e
		}
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	}
	return resp, nil
}

// Get sends a signed node-to-node GET and decodes its answer into out.
func (c *Caller) Get(ctx context.Context, addr, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, URL(addr, path), nil)
	if err != nil {
		return err
	}
	Sign(c.Key, req, Identity{Node: true}, nil)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer DrainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
