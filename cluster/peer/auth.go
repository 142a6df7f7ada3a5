package peer

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/user"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Identity is who is asking: learnt from the unix socket's peer credentials
// on the node the client talks to (as munge does for Slurm), then carried to
// the leader in a request signed with the cluster key. It is never taken
// from a request body.
type Identity struct {
	UID   uint32
	GID   uint32
	User  string
	Group string
	// Node is set for node-to-node requests that act for no user.
	Node bool
}

type identityKey struct{}

// WithIdentity returns ctx carrying id, the identity of the request's
// caller.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity put in ctx.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// PeerIdentity reads SO_PEERCRED from a unix connection.
func PeerIdentity(c net.Conn) (Identity, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Identity{}, errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Identity{}, err
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Identity{}, err
	}
	if serr != nil {
		return Identity{}, serr
	}
	return LookupIdentity(cred.Uid, cred.Gid), nil
}

// LookupIdentity names a uid and gid; unknown ids are named by number, as
// Slurm does.
func LookupIdentity(uid, gid uint32) Identity {
	id := Identity{UID: uid, GID: gid, User: strconv.Itoa(int(uid)), Group: strconv.Itoa(int(gid))}
	if u, err := user.LookupId(id.User); err == nil {
		id.User = u.Username
	}
	if g, err := user.LookupGroupId(id.Group); err == nil {
		id.Group = g.Name
	}
	return id
}

// Headers of signed node-to-node requests.
const (
	hdrUID   = "X-Hpc-Uid"
	hdrGID   = "X-Hpc-Gid"
	hdrUser  = "X-Hpc-User"
	hdrGroup = "X-Hpc-Group"
	hdrNode  = "X-Hpc-Node"
	hdrTime  = "X-Hpc-Time"
	hdrSig   = "X-Hpc-Signature"
	maxSkew  = 2 * time.Minute
)

// MaxBody is the most a request body may hold.
const MaxBody = 64 << 20

func signature(key []byte, method, uri string, h http.Header, body []byte) string {
	m := hmac.New(sha256.New, key)
	for _, s := range []string{method, uri, h.Get(hdrUID), h.Get(hdrGID), h.Get(hdrUser), h.Get(hdrGroup), h.Get(hdrNode), h.Get(hdrTime)} {
		m.Write([]byte(s))
		m.Write([]byte{0})
	}
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Sign sets the identity headers and the signature on a node-to-node request.
func Sign(key []byte, r *http.Request, id Identity, body []byte) {
	if id.Node {
		r.Header.Set(hdrNode, "1")
	} else {
		r.Header.Set(hdrUID, strconv.FormatUint(uint64(id.UID), 10))
		r.Header.Set(hdrGID, strconv.FormatUint(uint64(id.GID), 10))
		r.Header.Set(hdrUser, id.User)
		r.Header.Set(hdrGroup, id.Group)
	}
	r.Header.Set(hdrTime, strconv.FormatInt(time.Now().Unix(), 10))
	r.Header.Set(hdrSig, signature(key, r.Method, r.URL.RequestURI(), r.Header, body))
}

// Verify checks a signed request and returns the identity it carries and
// its body.
func Verify(key []byte, r *http.Request) (Identity, []byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody))
	if err != nil {
		return Identity{}, nil, err
	}
	got := r.Header.Get(hdrSig)
	want := signature(key, r.Method, r.URL.RequestURI(), r.Header, body)
	if got == "" || !hmac.Equal([]byte(got), []byte(want)) {
		return Identity{}, nil, errors.New("request not signed with the cluster key")
	}
	ts, err := strconv.ParseInt(r.Header.Get(hdrTime), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > maxSkew {
		return Identity{}, nil, errors.New("signed request too old (check the nodes' clocks)")
	}
	if r.Header.Get(hdrNode) == "1" {
		return Identity{Node: true}, body, nil
	}
	uid, err1 := strconv.ParseUint(r.Header.Get(hdrUID), 10, 32)
	gid, err2 := strconv.ParseUint(r.Header.Get(hdrGID), 10, 32)
	if err1 != nil || err2 != nil {
		return Identity{}, nil, fmt.Errorf("signed request without a valid identity")
	}
	return Identity{UID: uint32(uid), GID: uint32(gid), User: r.Header.Get(hdrUser), Group: r.Header.Get(hdrGroup)}, body, nil
}

// GossipKey derives memberlist's AES key from the cluster key.
func GossipKey(key []byte) []byte {
	sum := sha256.Sum256(append([]byte("hpc gossip\x00"), key...))
	return sum[:]
}

// NewBody is a request body holding b.
func NewBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }
