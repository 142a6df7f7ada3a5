package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
	"hpc/cluster/peer"
)

// dialStream is a raft.StreamLayer that only dials, the way an attacker's
// program using hashicorp/raft's own client would.
type dialStream struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)
}

func (s dialStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(string(addr), timeout)
}

// forgeEntry sends a controller an AppendEntries with a higher term and a
// submit of a job for uid 0 past its commit index, through dial.
func forgeEntry(t *testing.T, d *Daemon, dial func(string, time.Duration) (net.Conn, error)) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransport(dialStream{Listener: l, dial: dial}, 1, 5*time.Second, io.Discard)
	defer trans.Close()
	data, err := fsm.Encode(&fsm.Submit{Time: time.Now(), Job: &api.Job{UID: 0, User: "root",
		Spec: api.JobSpec{Name: "forged", Script: "#!/bin/sh\ntouch /tmp/pwned\n", WorkDir: "/tmp"}}})
	if err != nil {
		t.Fatal(err)
	}
	last := d.raft.LastIndex()
	req := &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(l.Addr().String())},
		Term:              d.raft.CurrentTerm() + 10,
		PrevLogEntry:      last,
		PrevLogTerm:       d.raft.CurrentTerm(),
		Entries:           []*raft.Log{{Index: last + 1, Term: d.raft.CurrentTerm() + 10, Type: raft.LogCommand, Data: data}},
		LeaderCommitIndex: last + 1,
	}
	var resp raft.AppendEntriesResponse
	return trans.AppendEntries("node1", raft.ServerAddress(d.addr(d.cfg.RaftPort)), req, &resp)
}

// Without the cluster's credentials nothing gets through a node's ports:
// not a forged Raft entry (in clear, over TLS without a certificate, or
// with another cluster's certificate), not an API request. With them, the
// same calls work, so the refusals come from the credentials.
func TestNodePortsNeedClusterCredentials(t *testing.T) {
	d, cl := startOne(t)
	other, err := peer.NodeCredentials(t.TempDir(), "node1", []string{d.self.Addr}, []byte("another cluster's key, 32 bytes!"))
	if err != nil {
		t.Fatal(err)
	}
	plain := func(addr string, timeout time.Duration) (net.Conn, error) {
		return net.DialTimeout("tcp", addr, timeout)
	}
	withConfig := func(cfg *tls.Config) func(string, time.Duration) (net.Conn, error) {
		return func(addr string, timeout time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, cfg)
		}
	}
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13}
	foreign := other.ClientConfig()
	foreign.InsecureSkipVerify = true // the attacker does not care who answers
	for name, dial := range map[string]func(string, time.Duration) (net.Conn, error){
		"clear": plain, "tls-without-certificate": withConfig(noCert), "another-cluster": withConfig(foreign),
	} {
		if err := forgeEntry(t, d, dial); err == nil {
			t.Errorf("%s: a forged AppendEntries was answered", name)
		}
		// The API port: the request gets no answer.
		c, err := dial(d.addr(d.cfg.APIPort), 5*time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write([]byte("GET /api/status HTTP/1.1\r\nHost: x\r\n\r\n"))
			b, _ := io.ReadAll(c)
			c.Close()
			if len(b) > 0 && name != "clear" {
				t.Errorf("%s: the API answered %q", name, b)
			}
		}
	}
	// A request a node signed (as if captured), replayed by a process
	// without a certificate: no handshake, no answer.
	body := []byte(`{"spec":{"script":"#!/bin/sh\ntrue\n","work_dir":"/tmp"}}`)
	req, _ := http.NewRequest(http.MethodPost, peer.URL(d.addr(d.cfg.APIPort), "/api/submit"), bytes.NewReader(body))
	peer.Sign(d.o.Key, req, peer.Identity{UID: 0, User: "root"}, body)
	replay := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: noCert}}
	if resp, err := replay.Do(req); err == nil {
		resp.Body.Close()
		t.Errorf("a replayed signed request was answered: %s", resp.Status)
	}
	time.Sleep(500 * time.Millisecond)
	if jobs, err := cl.Jobs(context.Background()); err != nil || len(jobs) != 0 {
		t.Fatalf("after the forged entries: %d jobs (%v)", len(jobs), err)
	}

	// The control: this cluster's credentials get through to both ports.
	var st api.Status
	if err := d.peers.Get(context.Background(), d.addr(d.cfg.APIPort), "/api/status", &st); err != nil {
		t.Errorf("a node's own call: %v", err)
	}
	// A stale heartbeat (term 0) changes nothing and is answered with the
	// controller's term.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransport(dialStream{Listener: l, dial: withConfig(d.creds.ClientConfig())}, 1, 5*time.Second, io.Discard)
	defer trans.Close()
	var resp raft.AppendEntriesResponse
	err = trans.AppendEntries("node1", raft.ServerAddress(d.addr(d.cfg.RaftPort)),
		&raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("node1"), Addr: []byte(l.Addr().String())}}, &resp)
	if err != nil || resp.Term != d.raft.CurrentTerm() || resp.Success {
		t.Errorf("with the cluster's credentials: %+v %v", resp, err)
	}
}
