package cluster

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// tlsStream is Raft's transport layer over TLS: a controller accepts only
// peers that show a certificate of this cluster, and shows its own, so a
// process without the cluster's credentials cannot send a controller an
// AppendEntries (a forged log entry) or a vote request.
type tlsStream struct {
	net.Listener
	advertise net.Addr
	client    *tls.Config
}

func newTLSStream(bind string, advertise net.Addr, server, client *tls.Config) (*tlsStream, error) {
	l, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	return &tlsStream{Listener: tls.NewListener(l, server), advertise: advertise, client: client}, nil
}

// Dial implements raft.StreamLayer.
func (s *tlsStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	c, err := tls.DialWithDialer(d, "tcp", string(addr), s.client)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Addr implements net.Listener: the address other controllers dial.
func (s *tlsStream) Addr() net.Addr { return s.advertise }
