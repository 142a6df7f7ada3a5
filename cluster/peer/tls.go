package peer

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Every channel between nodes (Raft, the nodes' HTTP API, step I/O) is
// TLS 1.3 with certificates on both sides, signed by the cluster's CA. The
// CA is derived from the cluster key: its private key is an Ed25519 key
// whose seed is HKDF-SHA256 of the cluster key, and its certificate is
// made deterministically, so that every node holding the key (hpc up
// writes it 0600; --join needs it, as munge needs munge.key) has the same
// CA without a CA file to copy. Each node issues its own certificate
// (a fresh P-256 key, kept 0600 in its state directory) for its name and
// address. A process without the cluster key cannot get a certificate,
// so it cannot complete a handshake on any node's port.

// CA is the cluster's certificate authority.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     ed25519.PrivateKey
}

// caEpoch bounds the CA's validity; fixed, so that the certificate is the
// same on every node.
var (
	caNotBefore = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	caNotAfter  = time.Date(2124, 1, 1, 0, 0, 0, 0, time.UTC)
)

// DeriveCA returns the CA of the cluster whose key is key.
func DeriveCA(key []byte) (*CA, error) {
	if len(key) < 16 {
		return nil, errors.New("cluster key shorter than 16 bytes")
	}
	seed, err := hkdf.Key(sha256.New, key, []byte("hpc cluster CA"), "ed25519 seed", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hpc cluster CA " + hex.EncodeToString(sum[:6])},
		NotBefore:             caNotBefore,
		NotAfter:              caNotAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		SubjectKeyId:          sum[:20],
	}
	// Ed25519 signatures are deterministic: the same key makes the same
	// certificate on every node.
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: priv}, nil
}

// Issue makes a node certificate for name at the addresses (IPs or host
// names), valid for client and server use, with a new key. It returns the
// certificate and the key, PEM-encoded.
func (ca *CA) Issue(name string, addrs []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{name},
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if a != "" && a != name {
			tmpl.DNSNames = append(tmpl.DNSNames, a)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, priv.Public(), ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("node certificate: %w", err)
	}
	kder, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}

// Credentials are a node's certificate and the cluster's CA.
type Credentials struct {
	Cert tls.Certificate
	CA   *x509.CertPool
}

// NodeCredentials returns node name's credentials, kept in dir/tls: its
// certificate and key (made there, the key 0600, the first time, or again
// when they no longer match the cluster key, the name or the addresses)
// and the CA's certificate (ca.crt, for inspection with openssl).
func NodeCredentials(dir, name string, addrs []string, key []byte) (*Credentials, error) {
	ca, err := DeriveCA(key)
	if err != nil {
		return nil, err
	}
	tdir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(tdir, 0o700); err != nil {
		return nil, err
	}
	certPath, keyPath := filepath.Join(tdir, "node.crt"), filepath.Join(tdir, "node.key")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil || !validFor(cert, pool, name, addrs) {
		certPEM, keyPEM, err := ca.Issue(name, addrs, time.Now())
		if err != nil {
			return nil, err
		}
		if err := writeFile(keyPath, keyPEM, 0o600); err != nil {
			return nil, err
		}
		if err := writeFile(certPath, certPEM, 0o644); err != nil {
			return nil, err
		}
		if cert, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
			return nil, err
		}
	}
	if old, err := os.ReadFile(filepath.Join(tdir, "ca.crt")); err != nil || !bytes.Equal(old, ca.CertPEM) {
		if err := writeFile(filepath.Join(tdir, "ca.crt"), ca.CertPEM, 0o644); err != nil {
			return nil, err
		}
	}
	return &Credentials{Cert: cert, CA: pool}, nil
}

// validFor reports whether a loaded certificate is this cluster's, for
// name at every one of addrs, and valid for a while yet.
func validFor(cert tls.Certificate, pool *x509.CertPool, name string, addrs []string) bool {
	if len(cert.Certificate) == 0 {
		return false
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return false
	}
	opts := x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		CurrentTime: time.Now().Add(24 * time.Hour)}
	if _, err := leaf.Verify(opts); err != nil || leaf.Subject.CommonName != name {
		return false
	}
	for _, a := range addrs {
		if leaf.VerifyHostname(a) != nil {
			return false
		}
	}
	return true
}

// writeFile writes data to path with mode, through a new file renamed
// into place (never through a link someone put there).
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ServerConfig is the TLS configuration of a node's listeners: TLS 1.3,
// and a client certificate of this cluster required.
func (c *Credentials) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.Cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    c.CA,
	}
}

// ClientConfig is the TLS configuration of a node's calls to other nodes:
// the server must show a certificate of this cluster for the address
// dialled, and this node shows its own.
func (c *Credentials) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.Cert},
		RootCAs:      c.CA,
	}
}
