package lxd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
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
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared"
	"github.com/canonical/lxd/shared/api"
)

// A trust token lets a client that the server does not know yet add its own
// certificate, once, as `lxc remote add NAME TOKEN` does for a new machine. The token
// also carries the fingerprint of the server's certificate, so the first contact can
// pin that certificate without the user copying it. After the first success the
// client certificate is trusted and the server certificate is on disk (server_cert):
// no later run, resume or destroy needs the token, which the engine neither records
// nor fingerprints (the `sensitive_keys` tag of the remote attribute).

// trustMu serialises the first contact: tasks of one run share a remote, and only one
// may generate the client's key pair and spend the token.
var trustMu sync.Mutex

// trustDial bounds the TLS handshake that fetches the server's certificate.
const trustDial = 10 * time.Second

// ensureTrust prepares, before connect, what remote's trust_token is for: a client
// certificate at client_cert/client_key (generated when both are missing), the
// server's certificate at server_cert (fetched and checked against the token's
// fingerprint when missing), and the server's trust in the client certificate.
// Without a token it does nothing.
func ensureTrust(ctx context.Context, remote map[string]string) error {
	token := remote["trust_token"]
	if token == "" {
		return nil
	}
	trustMu.Lock()
	defer trustMu.Unlock()
	addr := remote["address"]
	decoded, err := shared.CertificateTokenDecode(token)
	if err != nil {
		return fmt.Errorf("trust_token for %s is not an LXD trust token: %w", addr, err)
	}
	if err := ensureClientCert(remote["client_cert"], remote["client_key"]); err != nil {
		return err
	}
	if err := ensureServerCert(ctx, addr, remote["server_cert"], decoded.Fingerprint); err != nil {
		return err
	}
	return addTrust(ctx, remote, token, decoded)
}

// ensureClientCert generates a client key pair at certPath and keyPath when neither
// file exists, as lxc does on its first remote; one without the other is an error.
func ensureClientCert(certPath, keyPath string) error {
	_, cerr := os.Stat(certPath)
	_, kerr := os.Stat(keyPath)
	switch {
	case cerr == nil && kerr == nil:
		return nil
	case !os.IsNotExist(cerr) && cerr != nil:
		return fmt.Errorf("client_cert: %w", cerr)
	case !os.IsNotExist(kerr) && kerr != nil:
		return fmt.Errorf("client_key: %w", kerr)
	case (cerr == nil) != (kerr == nil):
		return fmt.Errorf("only one of client_cert %s and client_key %s exists; remove it or supply the other", certPath, keyPath)
	}
	certPEM, keyPEM, err := newClientCert()
	if err != nil {
		return fmt.Errorf("generate a client certificate: %w", err)
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write client_key: %w", err)
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return fmt.Errorf("write client_cert: %w", err)
	}
	return nil
}

// newClientCert makes a self-signed ECDSA P-384 client certificate valid for ten
// years, as lxc's own.
func newClientCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"flow"}, CommonName: "flow@" + host},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// ensureServerCert writes the server's certificate to path unless it is there: the
// certificate the server presents at addr, accepted only when its sha256 is the
// fingerprint the token carries.
func ensureServerCert(ctx context.Context, addr, path, fingerprint string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	cert, err := peerCertificate(ctx, addr)
	if err != nil {
		return fmt.Errorf("fetch the certificate of %s: %w", addr, err)
	}
	sum := sha256.Sum256(cert.Raw)
	if got := hex.EncodeToString(sum[:]); got != fingerprint {
		return fmt.Errorf("%s presents certificate %s, but the trust token names %s: not the server that issued the token", addr, got[:12], shortFingerprint(fingerprint))
	}
	if err := writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o644); err != nil {
		return fmt.Errorf("write server_cert: %w", err)
	}
	return nil
}

// peerCertificate is the leaf certificate addr presents. It is not verified here:
// the caller compares it with the fingerprint it trusts.
func peerCertificate(ctx context.Context, addr string) (*x509.Certificate, error) {
	u, err := url.Parse(addr)
	if err != nil {
		return nil, err
	}
	hostport := u.Host
	if u.Port() == "" {
		hostport = net.JoinHostPort(u.Hostname(), "8443")
	}
	dctx, cancel := context.WithTimeout(ctx, trustDial)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // pinned by fingerprint below
	conn, err := d.DialContext(dctx, "tcp", hostport)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, errors.New("no certificate presented")
	}
	return certs[0], nil
}

// addTrust spends the token to make the server trust the client certificate, unless
// it trusts it already. A server older than the explicit_trust_token extension takes
// the token as the password.
func addTrust(ctx context.Context, remote map[string]string, token string, decoded *api.CertificateAddToken) error {
	srv, err := connectHTTPS(ctx, remote)
	if err != nil {
		return err
	}
	if info, _, err := srv.GetServer(); err == nil && info.Auth == "trusted" {
		return nil
	}
	req := api.CertificatesPost{Type: api.CertificateTypeClient}
	if srv.HasExtension("explicit_trust_token") {
		req.TrustToken = token
	} else {
		req.Password = token
	}
	if decoded.Type != "" {
		err = srv.CreateIdentityTLS(api.IdentitiesTLSPost{TrustToken: token})
	} else {
		err = srv.CreateCertificate(req)
	}
	if err != nil && !api.StatusErrorCheck(err, http.StatusConflict) {
		return fmt.Errorf("add client_cert to %s with the trust token (is it spent or expired? make a new one with `lxc config trust add`): %w", remote["address"], err)
	}
	// The connection's identity is cached per connection: ask on a new one.
	srv, err = connectHTTPS(ctx, remote)
	if err != nil {
		return err
	}
	if info, _, err := srv.GetServer(); err != nil || info.Auth != "trusted" {
		return fmt.Errorf("%s does not trust client_cert %s after the trust token was accepted", remote["address"], remote["client_cert"])
	}
	return nil
}

// connectHTTPS connects to remote's address with its certificates read from disk.
func connectHTTPS(ctx context.Context, remote map[string]string) (lxdclient.InstanceServer, error) {
	addr := remote["address"]
	args := &lxdclient.ConnectionArgs{UserAgent: "flow"}
	for key, dst := range map[string]*string{
		"client_cert": &args.TLSClientCert,
		"client_key":  &args.TLSClientKey,
		"server_cert": &args.TLSServerCert,
	} {
		if path := remote[key]; path != "" {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("connect to LXD at %s: read %s: %w", addr, key, err)
			}
			*dst = string(b)
		}
	}
	srv, err := lxdclient.ConnectLXDWithContext(ctx, addr, args)
	if err != nil {
		return nil, fmt.Errorf("connect to LXD at %s: %w", addr, err)
	}
	return srv, nil
}

// writeFileAtomic writes b to path through a temporary file in its directory, so a
// reader never sees half a certificate.
func writeFileAtomic(path string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
