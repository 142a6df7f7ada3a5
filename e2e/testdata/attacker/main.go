// Command attacker is what a hostile local user (or a job) can run against
// an hpc lab: the attacks of the trust-boundary suite (e2e/attack_test.go),
// each printing one line "ATTACK NAME: refused (why)" or "ATTACK NAME:
// GOT THROUGH (what)". It is built and run by the test, as uid 65534, from
// outside and from inside a job; it has no credentials but what any user
// has.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"hpc/cluster/api"
	"hpc/cluster/fsm"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: attacker raft|api|internal|bigbody|slowloris|garbage ARGS...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "raft": // ADDR: a forged AppendEntries, in clear and over TLS without a certificate
		forgeRaft(os.Args[2])
	case "api": // ADDR: a submit to a node's TCP API, in clear and over TLS without a certificate
		tcpAPI(os.Args[2])
	case "internal": // SOCKET: the agents' routes through the local socket
		internal(os.Args[2])
	case "bigbody": // SOCKET: a 100 MiB submit
		bigBody(os.Args[2])
	case "slowloris": // SOCKET: headers one byte a second
		slowLoris(os.Args[2])
	case "garbage": // ADDR...: random bytes and truncated frames to each port
		garbage(os.Args[2:])
	case "snoop": // SOCKET JOBID SECRET: another user's script and environment
		snoop(os.Args[2], os.Args[3], os.Args[4])
	default:
		fmt.Fprintln(os.Stderr, "unknown attack", os.Args[1])
		os.Exit(2)
	}
}

func report(name string, through bool, what string) {
	verdict := "refused"
	if through {
		verdict = "GOT THROUGH"
	}
	fmt.Printf("ATTACK %s: %s (%s)\n", name, verdict, what)
}

type dialer struct {
	net.Listener
	dial func(addr string, timeout time.Duration) (net.Conn, error)
}

func (d dialer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return d.dial(string(addr), timeout)
}

// forgeRaft sends a controller the entry of the report: a higher term, a
// submit for uid 0 past the commit index.
func forgeRaft(addr string) {
	data, _ := fsm.Encode(&fsm.Submit{Time: time.Now(), Job: &api.Job{UID: 0, User: "root",
		Spec: api.JobSpec{Name: "forged", Script: "#!/bin/sh\ntouch /tmp/hpc-forged-entry\n", WorkDir: "/tmp"}}})
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}
	for name, dial := range map[string]func(string, time.Duration) (net.Conn, error){
		"raft-clear": func(a string, t time.Duration) (net.Conn, error) { return net.DialTimeout("tcp", a, t) },
		"raft-tls-without-certificate": func(a string, t time.Duration) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: t}, "tcp", a, noCert)
		},
	} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			report(name, false, "cannot listen: "+err.Error())
			continue
		}
		tr := raft.NewNetworkTransport(dialer{Listener: l, dial: dial}, 1, 5*time.Second, io.Discard)
		var resp raft.AppendEntriesResponse
		err = tr.AppendEntries("node1", raft.ServerAddress(addr), &raft.AppendEntriesRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(l.Addr().String())},
			Term:      1 << 40, PrevLogEntry: 0, PrevLogTerm: 0, LeaderCommitIndex: 1 << 40,
			Entries: []*raft.Log{{Index: 1 << 40, Term: 1 << 40, Type: raft.LogCommand, Data: data}},
		}, &resp)
		tr.Close()
		report(name, err == nil, fmt.Sprint(err))
	}
}

// tcpAPI tries a node's TCP API as a user would, without the cluster's
// credentials.
func tcpAPI(addr string) {
	body := `{"spec":{"script":"#!/bin/sh\ntouch /tmp/hpc-forged-api\n","work_dir":"/tmp"}}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/submit", strings.NewReader(body))
	req.Header.Set("X-Hpc-Uid", "0")
	req.Header.Set("X-Hpc-Node", "1")
	resp, err := http.DefaultClient.Do(req)
	through := err == nil && resp.StatusCode == http.StatusOK
	what := fmt.Sprint(err)
	if err == nil {
		what = resp.Status
		resp.Body.Close()
	}
	report("api-clear", through, what)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err = hc.Post("https://"+addr+"/internal/launch", "application/json", strings.NewReader(`{"id":1}`))
	through = err == nil && resp.StatusCode == http.StatusOK
	what = fmt.Sprint(err)
	if err == nil {
		what = resp.Status
		resp.Body.Close()
	}
	report("api-tls-without-certificate", through, what)
}

func unixClient(socket string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
}

// internal calls the node-to-node routes through the local socket, as a
// user (or a job) may: a launch as root, a signal, a job end.
func internal(socket string) {
	hc := unixClient(socket, 10*time.Second)
	for _, c := range []struct{ path, body string }{
		{"/internal/launch", `{"id":424242,"uid":0,"gid":0,"spec":{"script":"#!/bin/sh\ntouch /tmp/hpc-forged-launch\n","work_dir":"/tmp"}}`},
		{"/internal/signal", `{"job_id":1,"signal":9}`},
		{"/internal/job-end", `{"job_id":1,"node":"node1","exit_code":0}`},
		{"/internal/step/launch", `{}`},
	} {
		resp, err := hc.Post("http://x"+c.path, "application/json", strings.NewReader(c.body))
		through := err == nil && resp.StatusCode == http.StatusOK
		what := fmt.Sprint(err)
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
			what = resp.Status + " " + strings.TrimSpace(string(b))
			resp.Body.Close()
		}
		report("internal"+strings.ReplaceAll(c.path[len("/internal"):], "/", "-"), through, what)
	}
}

// endless is an endless stream of bytes.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	e.n += int64(len(p))
	return len(p), nil
}

// bigBody sends a 100 MiB submit; the node must answer (413) without
// reading it all.
func bigBody(socket string) {
	src := &endless{}
	body := io.MultiReader(strings.NewReader(`{"spec":{"script":"#!/bin/sh\n`), io.LimitReader(src, 100<<20), strings.NewReader(`","work_dir":"/tmp"}}`))
	start := time.Now()
	resp, err := unixClient(socket, time.Minute).Post("http://x/api/submit", "application/json", body)
	what := fmt.Sprint(err)
	through := false
	if err == nil {
		what = resp.Status
		through = resp.StatusCode == http.StatusOK
		resp.Body.Close()
	}
	report("bigbody", through, fmt.Sprintf("%s after %d MiB sent in %.1fs", what, src.n>>20, time.Since(start).Seconds()))
}

// slowLoris opens a connection and sends a request's headers one byte a
// second; the node must cut it off.
func slowLoris(socket string) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		report("slowloris", false, err.Error())
		return
	}
	defer c.Close()
	start := time.Now()
	req := "GET /api/jobs HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Slow: y\r\n", 1000)
	for i := 0; i < len(req); i++ {
		if _, err := c.Write([]byte{req[i]}); err != nil {
			report("slowloris", false, fmt.Sprintf("cut off after %.0fs: %v", time.Since(start).Seconds(), err))
			return
		}
		if time.Since(start) > 60*time.Second {
			report("slowloris", true, "still connected after 60s")
			return
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		if n, err := bufio.NewReader(c).Peek(1); len(n) > 0 || (err != nil && !isTimeout(err)) {
			report("slowloris", false, fmt.Sprintf("answered or closed after %.0fs", time.Since(start).Seconds()))
			return
		}
	}
	report("slowloris", true, "sent a whole request slowly")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// garbage sends random bytes, a truncated TLS hello and a truncated HTTP
// request to each address (TCP, and UDP for the gossip port).
func garbage(addrs []string) {
	hello := []byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03}
	for _, a := range addrs {
		for name, payload := range map[string][]byte{
			"random": randomBytes(64 << 10), "truncated-tls": hello, "truncated-http": []byte("POST /api/submit HTTP/1.1\r\nContent-Length: 99999\r\n\r\n{\"spec\""),
		} {
			if c, err := net.DialTimeout("tcp", a, 5*time.Second); err == nil {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.Write(payload)
				b, _ := io.ReadAll(c)
				c.Close()
				report("garbage-tcp-"+name+"-"+a, bytes.Contains(b, []byte("200 OK")), fmt.Sprintf("%d bytes back", len(b)))
			}
			if c, err := net.Dial("udp", a); err == nil {
				c.Write(payload[:min(len(payload), 1400)])
				c.Close()
			}
		}
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// snoop reads another user's job through every route that returns jobs,
// looking for a secret in its script or environment.
func snoop(socket, id, secret string) {
	hc := unixClient(socket, 30*time.Second)
	for _, path := range []string{"/api/jobs", "/api/wait?job=" + id + "&timeout=1s", "/api/jobscript?job=" + id, "/api/priority", "/api/acct?all=1"} {
		resp, err := hc.Get("http://x" + path)
		if err != nil {
			report("snoop "+path, false, err.Error())
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		report("snoop "+path, bytes.Contains(b, []byte(secret)), fmt.Sprintf("%s, %d bytes", resp.Status, len(b)))
	}
}
