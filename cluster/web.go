package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"hpc/cluster/api"
	"hpc/cluster/peer"
)

// The API port speaks two protocols. Other nodes speak TLS and must show a
// client certificate of the cluster before a byte of HTTP is read. People
// speak plain HTTP: the dashboard, /metrics and Slurm's REST API
// (web routes). The first byte tells them apart: a TLS connection opens
// with a handshake record (0x16); an HTTP request opens with a method
// name.

// splitListener hands the connections of one TCP listener to two
// listeners, by their first byte.
type splitListener struct {
	base       net.Listener
	tls, plain *chanListener
}

func newSplitListener(base net.Listener) *splitListener {
	s := &splitListener{base: base}
	done := make(chan struct{})
	var once sync.Once
	closeAll := func() error {
		var err error
		once.Do(func() { close(done); err = base.Close() })
		return err
	}
	s.tls = &chanListener{addr: base.Addr(), ch: make(chan net.Conn), done: done, close: closeAll}
	s.plain = &chanListener{addr: base.Addr(), ch: make(chan net.Conn), done: done, close: closeAll}
	go s.serve(done)
	return s
}

// sniffTimeout bounds how long a connection may stay silent before its
// first byte; a silent one holds only its own goroutine.
const sniffTimeout = 10 * time.Second

func (s *splitListener) serve(done chan struct{}) {
	for {
		c, err := s.base.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				s.tls.Close()
				return
			}
			// Out of descriptors and the like: wait, as net/http does.
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		go s.route(c, done)
	}
}

func (s *splitListener) route(c net.Conn, done chan struct{}) {
	_ = c.SetReadDeadline(time.Now().Add(sniffTimeout))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	to := s.plain
	if first[0] == 0x16 {
		to = s.tls
	}
	select {
	case to.ch <- &peekedConn{Conn: c, r: br}:
	case <-done:
		c.Close()
	}
}

// peekedConn reads first what was peeked.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// chanListener accepts what splitListener hands it. Closing it closes
// the port.
type chanListener struct {
	addr  net.Addr
	ch    chan net.Conn
	done  chan struct{}
	close func() error
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { return l.close() }
func (l *chanListener) Addr() net.Addr { return l.addr }

// webServer is the plain-HTTP side of the API port: web routes only, each
// request with its web identity (webIdentity) in its context.
func (d *Daemon) webServer() *http.Server {
	mux := http.NewServeMux()
	d.registerWebRoutes(mux)
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := d.webIdentity(r)
			if err != nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="slurm"`)
				peer.WriteErr(w, http.StatusUnauthorized, err)
				return
			}
			if id.Anonymous && r.Method != http.MethodGet && r.Method != http.MethodHead {
				peer.WriteErr(w, http.StatusForbidden, errors.New("an anonymous viewer may only look: send X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (scontrol token)"))
				return
			}
			ctx := withWebIdentity(r.Context(), id)
			if !id.Anonymous {
				ctx = peer.WithIdentity(ctx, id.Identity)
			}
			mux.ServeHTTP(w, r.WithContext(ctx))
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}

// registerWebRoutes is every web route: the dashboard, /metrics, Slurm's
// REST API.
func (d *Daemon) registerWebRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /hpc/whoami", d.handleWhoami)
	d.registerRESTRoutes(mux)      // rest.go
	d.registerDashboardRoutes(mux) // dashboard.go
	d.registerMetricsRoutes(mux)   // metrics.go
}

// WebIdentity is who sends a web request: a user who showed a token
// (scontrol token), or an anonymous viewer on the node's own machine.
type WebIdentity struct {
	peer.Identity
	Anonymous bool
}

type webIdentityKey struct{}

func withWebIdentity(ctx context.Context, id WebIdentity) context.Context {
	return context.WithValue(ctx, webIdentityKey{}, id)
}

// anonymousUID is the uid an anonymous viewer asks as: Slurm's NO_VAL
// (0xfffffffe), which no account is given (useradd and systemd keep
// (uid_t)-2 out of use, and Slurm reads it as "no uid"). It is not
// nobody's 65534: the labs submit jobs as nobody, and under
// PrivateData=jobs a viewer shown data as nobody would see nobody's jobs
// as its own.
const anonymousUID uint32 = 0xfffffffe

// anonymous is the identity an anonymous viewer is shown data as: a user
// no account has, who owns no job (jobViewer.owns never matches it) and
// is privileged for nothing, so PrivateData hides from it what it hides
// from any other user.
var anonymous = WebIdentity{Identity: peer.Identity{UID: anonymousUID, GID: anonymousUID, User: "(anonymous)", Group: "(anonymous)"}, Anonymous: true}

// Slurm's headers for its JWT scheme; a browser, which cannot set headers
// on an EventSource, may send the token in the cookie instead.
const (
	hdrSlurmUser  = "X-SLURM-USER-NAME"
	hdrSlurmToken = "X-SLURM-USER-TOKEN"
	tokenCookie   = "slurm_jwt"
)

// webIdentity tells who sends r. A token (header, Authorization: Bearer,
// or the cookie) must verify with the cluster's key, be unexpired and, if
// X-SLURM-USER-NAME is sent, name that user. Without a token, a request
// from the machine itself (a loopback address) is an anonymous viewer;
// from anywhere else it is refused.
func (d *Daemon) webIdentity(r *http.Request) (WebIdentity, error) {
	tok := r.Header.Get(hdrSlurmToken)
	if tok == "" {
		if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			tok = strings.TrimSpace(a)
		}
	}
	if tok == "" {
		if c, err := r.Cookie(tokenCookie); err == nil {
			tok = c.Value
		}
	}
	if tok == "" {
		if r.Header.Get(hdrSlurmUser) != "" {
			return WebIdentity{}, errors.New("X-SLURM-USER-NAME without X-SLURM-USER-TOKEN")
		}
		if !loopbackPeer(r.RemoteAddr) {
			return WebIdentity{}, errors.New("authentication required: send X-SLURM-USER-NAME and X-SLURM-USER-TOKEN (scontrol token)")
		}
		return anonymous, nil
	}
	name, err := peer.VerifyToken(d.o.Key, tok, time.Now())
	if err != nil {
		return WebIdentity{}, err
	}
	if u := r.Header.Get(hdrSlurmUser); u != "" && u != name {
		return WebIdentity{}, errors.New("X-SLURM-USER-NAME does not match the token's user")
	}
	id, err := peer.LookupUser(name)
	if err != nil {
		return WebIdentity{}, err
	}
	return WebIdentity{Identity: id}, nil
}

// loopbackPeer reports whether addr (host:port) is on this machine.
func loopbackPeer(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// WebIdentityFrom is the identity webServer put in a web request's
// context.
func WebIdentityFrom(r *http.Request) (WebIdentity, bool) {
	id, ok := r.Context().Value(webIdentityKey{}).(WebIdentity)
	return id, ok
}

// handleWhoami says who the web side takes the caller for.
func (d *Daemon) handleWhoami(w http.ResponseWriter, r *http.Request) {
	id, _ := WebIdentityFrom(r)
	peer.WriteJSON(w, map[string]any{"user": id.User, "uid": id.UID, "anonymous": id.Anonymous})
}

// maxTokenLife is the longest lifespan a token may be given (a year).
const maxTokenLife = 365 * 24 * time.Hour

// handleToken makes a token for the caller on the node's own socket;
// root and SlurmUser may make one for any user (scontrol token
// username=).
func (d *Daemon) handleToken(w http.ResponseWriter, r *http.Request) {
	id, ok := peer.IdentityFrom(r.Context())
	if !ok || id.Node || r.TLS != nil {
		peer.WriteErr(w, http.StatusForbidden, errors.New("tokens are made on the node's own socket"))
		return
	}
	body, err := d.requestBody(w, r)
	if err != nil {
		bodyErr(w, err)
		return
	}
	var req api.TokenRequest
	if err := json.Unmarshal(body, &req); err != nil {
		peer.WriteErr(w, http.StatusBadRequest, err)
		return
	}
	user := id.User
	if req.User != "" && req.User != id.User {
		if id.UID != 0 && id.UID != d.slurmUserUID() {
			peer.UserErr(w, &api.Error{Message: api.ErrAccessDenied, Detail: "only root or SlurmUser may make a token for another user"})
			return
		}
		if _, err := peer.LookupUser(req.User); err != nil {
			peer.UserErr(w, &api.Error{Message: api.ErrUserIDMissing, Detail: err.Error()})
			return
		}
		user = req.User
	}
	life := peer.DefaultTokenLife
	if req.Lifespan < 0 || time.Duration(req.Lifespan)*time.Second > maxTokenLife {
		peer.UserErr(w, &api.Error{Message: api.ErrUnexpectedMessage, Detail: "lifespan out of range"})
		return
	}
	if req.Lifespan > 0 {
		life = time.Duration(req.Lifespan) * time.Second
	}
	tok, err := peer.MakeToken(d.o.Key, user, time.Now(), life)
	if err != nil {
		peer.WriteErr(w, http.StatusInternalServerError, err)
		return
	}
	peer.WriteJSON(w, api.TokenResponse{Token: tok})
}
