package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// submitServer answers submissions on a unix socket: the first lost ones
// (the connection closed without an answer, or the leader gone) and then
// the job id; it records the tokens it saw.
func submitServer(t *testing.T, lost int) (string, func() []string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var tokens []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req SubmitRequest
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		tokens = append(tokens, req.Token)
		n := len(tokens)
		mu.Unlock()
		switch {
		case n > lost:
			json.NewEncoder(w).Encode(SubmitResponse{JobID: 7})
		case n%2 == 1: // the answer is lost with the connection
			c, _, _ := w.(http.Hijacker).Hijack()
			c.Close()
		default: // the node's leader went away
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(Error{Message: ErrNoLeader})
		}
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), tokens...)
	}
}

// Submit sends a submission whose answer was lost again, with the same
// token, until an answer comes.
func TestSubmitRetriesWithToken(t *testing.T) {
	sock, seen := submitServer(t, 3)
	id, err := NewClient(sock).Submit(context.Background(), JobSpec{Script: "#!/bin/sh\n"})
	toks := seen()
	if err != nil || id != 7 || len(toks) != 4 {
		t.Fatalf("Submit: %d %v after %d tries", id, err, len(toks))
	}
	for _, tok := range toks {
		if tok != toks[0] || len(tok) != 32 {
			t.Fatalf("tokens sent: %q", toks)
		}
	}
}

// Past SubmitRetryWait, Submit fails with Slurm's connect failure; a
// refusal is not tried again.
func TestSubmitGivesUp(t *testing.T) {
	defer func(w time.Duration) { SubmitRetryWait = w }(SubmitRetryWait)
	SubmitRetryWait = 300 * time.Millisecond
	sock, seen := submitServer(t, 1<<30)
	_, err := NewClient(sock).Submit(context.Background(), JobSpec{Script: "#!/bin/sh\n"})
	var ae *Error
	if !errors.As(err, &ae) || ae.Message != ErrNoLeader || len(seen()) < 2 {
		t.Fatalf("Submit: %v after %d tries", err, len(seen()))
	}

	_, err = NewClient(filepath.Join(t.TempDir(), "none")).Submit(context.Background(), JobSpec{})
	if !errors.As(err, &ae) || ae.Message != ErrNoLeader {
		t.Fatalf("Submit to no node: %v", err)
	}

	sock = filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(Error{Message: ErrInvalidPartition})
	})}
	go srv.Serve(l)
	defer srv.Close()
	_, err = NewClient(sock).Submit(context.Background(), JobSpec{})
	if !errors.As(err, &ae) || ae.Message != ErrInvalidPartition || n != 1 {
		t.Fatalf("refused submit: %v after %d tries", err, n)
	}
}
