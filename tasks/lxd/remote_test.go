package lxd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The HTTPS path against the real daemon: it listens on 127.0.0.1, trusts a client
// certificate generated here, and is pinned by its own server certificate.
func TestHTTPSRemote(t *testing.T) {
	addr := httpsAddress(t)
	dir := t.TempDir()
	trusted := writeClientCert(t, dir, "trusted")
	untrusted := writeClientCert(t, dir, "untrusted")
	lxc(t, "config", "trust", "add", trusted.cert)
	t.Cleanup(func() { _ = lxcQuiet("config", "trust", "remove", trusted.fingerprint) })
	serverCert := filepath.Join(dir, "server.crt")
	if err := os.WriteFile(serverCert, serverCertificate(t), 0o600); err != nil {
		t.Fatal(err)
	}
	otherCert := filepath.Join(dir, "other.crt")
	if err := os.WriteFile(otherCert, mustRead(t, untrusted.cert), 0o600); err != nil {
		t.Fatal(err)
	}

	remote := func(c clientCert, server string) map[string]string {
		return map[string]string{"address": "https://" + addr, "client_cert": c.cert, "client_key": c.key, "server_cert": server}
	}
	tests := []struct {
		name    string
		remote  map[string]string
		wantErr string
	}{
		{"trusted client", remote(trusted, serverCert), ""},
		{"trusted client, default project", withKey(remote(trusted, serverCert), "project", "default"), ""},
		{"untrusted client", remote(untrusted, serverCert), "does not trust client_cert"},
		{"no client certificate", map[string]string{"address": "https://" + addr, "server_cert": serverCert}, "no client_cert given"},
		{"wrong server certificate", remote(trusted, otherCert), "certificate"},
		{"missing key file", withKey(remote(trusted, serverCert), "client_key", filepath.Join(dir, "nope.key")), "read client_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validateRemote(tt.remote); err != nil {
				t.Fatalf("validateRemote: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			srv, err := connect(ctx, tt.remote)
			if err == nil {
				var names []string
				names, err = srv.GetInstanceNames("")
				if err == nil && tt.wantErr == "" {
					t.Logf("listed %d instances over HTTPS", len(names))
				}
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("want success, got %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			case err != nil:
				t.Logf("error as the user sees it: %v", err)
			}
		})
	}
}

func TestValidateRemote(t *testing.T) {
	tests := []struct {
		remote  map[string]string
		wantErr string
	}{
		{nil, ""},
		{map[string]string{"project": "lab"}, ""},
		{map[string]string{"socket": "/tmp/lxd.socket"}, ""},
		{map[string]string{"address": "https://127.0.0.1:8443", "client_cert": "c", "client_key": "k"}, ""},
		{map[string]string{"adress": "https://x"}, `unknown key "adress"`},
		{map[string]string{"address": "127.0.0.1:8443"}, "must start with https://"},
		{map[string]string{"client_cert": "c"}, "only used with address"},
		{map[string]string{"address": "https://h:1", "client_cert": "c"}, "must be set together"},
		{map[string]string{"address": "https://h:1", "socket": "/s"}, "mutually exclusive"},
	}
	for _, tt := range tests {
		err := validateRemote(tt.remote)
		if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("validateRemote(%v) = %v, want %q", tt.remote, err, tt.wantErr)
		}
	}
}

// httpsAddress returns an address on which the daemon serves HTTPS to this machine.
// A daemon that listens nowhere is made to listen on 127.0.0.1:8443 for the test. One
// that already listens keeps its setting, and is reached where it listens: on
// 127.0.0.1 when that is every address (":8443", "[::]:8443"), else on its own
// address, which is this machine's. The client pins the daemon's certificate, not a
// host name, so any of its addresses serves the test; there is nothing to skip.
func httpsAddress(t *testing.T) string {
	t.Helper()
	addr := strings.TrimSpace(lxc(t, "config", "get", "core.https_address"))
	if addr != "" {
		return reachableAddress(addr)
	}
	addr = "127.0.0.1:8443"
	lxc(t, "config", "set", "core.https_address", addr)
	t.Cleanup(func() { _ = lxcQuiet("config", "unset", "core.https_address") })
	return addr
}

// reachableAddress is where this machine reaches a daemon whose core.https_address
// is addr: a wildcard host becomes 127.0.0.1, a missing port LXD's default 8443.
func reachableAddress(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), "8443"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func TestReachableAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:8443": "127.0.0.1:8443",
		"127.0.0.2:9443": "127.0.0.2:9443",
		":8443":          "127.0.0.1:8443",
		"0.0.0.0:8444":   "127.0.0.1:8444",
		"[::]:8443":      "127.0.0.1:8443",
		"[::1]:8443":     "[::1]:8443",
		"10.1.2.3":       "10.1.2.3:8443",
		"[::]":           "127.0.0.1:8443",
		"lab.example:1":  "lab.example:1",
	} {
		if got := reachableAddress(in); got != want {
			t.Errorf("reachableAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

type clientCert struct{ cert, key, fingerprint string }

// writeClientCert writes a self-signed client certificate and key, as `lxc remote add`
// would generate, and returns their paths and the certificate's fingerprint.
func writeClientCert(t *testing.T, dir, name string) clientCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "flow-test-" + name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := clientCert{cert: filepath.Join(dir, name+".crt"), key: filepath.Join(dir, name+".key")}
	sum := sha256.Sum256(der)
	c.fingerprint = hex.EncodeToString(sum[:])
	if err := os.WriteFile(c.cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// serverCertificate reads the daemon's certificate through its own API on the unix
// socket, where the client is always trusted.
func serverCertificate(t *testing.T) []byte {
	t.Helper()
	srv, err := connect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := srv.GetServer()
	if err != nil {
		t.Fatal(err)
	}
	if info.Environment.Certificate == "" {
		t.Fatal("the daemon reported no certificate")
	}
	return []byte(info.Environment.Certificate)
}

func withKey(m map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for key, val := range m {
		if key != k {
			out[key] = val
		}
	}
	return out
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
