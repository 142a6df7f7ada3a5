package peer

import (
	"bytes"
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Every node holding the cluster key derives the same CA; another key
// gives another CA.
func TestDeriveCA(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	a, err := DeriveCA(key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DeriveCA(append([]byte(nil), key...))
	if !bytes.Equal(a.CertPEM, b.CertPEM) {
		t.Error("the same key gave two CA certificates")
	}
	c, _ := DeriveCA([]byte("another key, another cluster!!!!"))
	if bytes.Equal(a.CertPEM, c.CertPEM) {
		t.Error("two keys gave one CA")
	}
	if !a.Cert.IsCA {
		t.Error("not a CA")
	}
	if _, err := DeriveCA([]byte("short")); err == nil {
		t.Error("a short key was accepted")
	}
}

// A node's credentials are made once (key 0600), kept across restarts,
// and made again when the cluster key or the node's address changes; a
// handshake needs both sides to hold credentials of the same cluster.
func TestNodeCredentials(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	dir := t.TempDir()
	c1, err := NodeCredentials(dir, "node1", []string{"127.0.0.1"}, key)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "tls", "node.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("node.key: %v %v", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Join(dir, "tls")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("tls dir: %v %v", st.Mode(), err)
	}
	c2, _ := NodeCredentials(dir, "node1", []string{"127.0.0.1"}, key)
	if !bytes.Equal(c1.Cert.Certificate[0], c2.Cert.Certificate[0]) {
		t.Error("a restart made a new certificate")
	}
	c3, _ := NodeCredentials(dir, "node1", []string{"127.0.0.2"}, key)
	if bytes.Equal(c1.Cert.Certificate[0], c3.Cert.Certificate[0]) {
		t.Error("a new address kept the old certificate")
	}
	other, _ := NodeCredentials(t.TempDir(), "node2", []string{"127.0.0.1"}, []byte("another key, another cluster!!!!"))
	peerOf, _ := NodeCredentials(t.TempDir(), "node2", []string{"127.0.0.1"}, key)

	if err := handshake(c2, peerOf); err != nil {
		t.Errorf("two nodes of one cluster: %v", err)
	}
	if err := handshake(c2, other); err == nil {
		t.Error("a node of another cluster got through")
	}
}

// handshake runs a server with srv's credentials on 127.0.0.1 and a client
// with cli's, and says whether a byte made it through.
func handshake(srv, cli *Credentials) error {
	l, err := tls.Listen("tcp", "127.0.0.1:0", srv.ServerConfig())
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err == nil {
			c.Write(b)
		}
	}()
	c, err := tls.Dial("tcp", l.Addr().String(), cli.ClientConfig())
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte{1}); err != nil {
		return err
	}
	_, err = io.ReadFull(c, make([]byte, 1))
	return err
}
