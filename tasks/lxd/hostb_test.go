package lxd

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/internal/lxdtest"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// These tests talk to host B, the second real LXD daemon (internal/lxdtest,
// scripts/lab-host-b.sh), over HTTPS on 127.0.0.2:8443.

// TestTrustToken adds a new client to host B the way a user adds a real machine: a
// single-use token, no certificate copied by hand. The first contact generates the
// client's key pair, pins the server certificate the token names, and spends the
// token; later contacts need neither the token nor anything else.
func TestTrustToken(t *testing.T) {
	hb := lxdtest.StartHostB(t)
	dir := t.TempDir()
	remote := map[string]string{
		"address":     hb.Address,
		"client_cert": filepath.Join(dir, "client.crt"),
		"client_key":  filepath.Join(dir, "client.key"),
		"server_cert": filepath.Join(dir, "servercerts", "b.crt"),
		"trust_token": hb.Token(t),
	}
	t.Cleanup(func() { untrust(t, hb, remote["client_cert"]) })
	if err := validateRemote(remote); err != nil {
		t.Fatal(err)
	}
	mustTrusted(t, remote)
	if pinned := mustRead(t, remote["server_cert"]); !strings.Contains(string(pinned), "BEGIN CERTIFICATE") {
		t.Fatalf("server_cert holds %q", pinned)
	}
	withoutToken := maps.Clone(remote)
	delete(withoutToken, "trust_token")
	mustTrusted(t, withoutToken) // what destroy and refresh do: the record holds no token
	mustTrusted(t, remote)       // a spent token is not used again once trusted

	other := t.TempDir()
	spent := withKey(withKey(withKey(remote, "client_cert", filepath.Join(other, "c.crt")), "client_key", filepath.Join(other, "c.key")), "server_cert", filepath.Join(other, "s.crt"))
	t.Cleanup(func() { untrust(t, hb, spent["client_cert"]) })
	forged := withKey(withKey(spent, "trust_token", forgeFingerprint(t, remote["trust_token"])), "server_cert", filepath.Join(other, "forged.crt"))
	for _, tt := range []struct {
		name    string
		remote  map[string]string
		wantErr string
	}{
		{"spent token, new client", spent, "spent or expired"},
		{"token naming another server's certificate", forged, "not the server that issued the token"},
		{"not a token", withKey(spent, "trust_token", "hello"), "not an LXD trust token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := connect(ctx, tt.remote)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("want an error containing %q, got %v", tt.wantErr, err)
			}
			if strings.Contains(err.Error(), tt.remote["trust_token"]) {
				t.Errorf("the error shows the token: %v", err)
			}
			t.Logf("error as the user sees it: %v", err)
		})
	}
	if _, err := os.Stat(forged["server_cert"]); err == nil {
		t.Error("a certificate that does not match the token was pinned")
	}
}

func TestValidateTrustToken(t *testing.T) {
	for _, tt := range []struct {
		remote  map[string]string
		wantErr string
	}{
		{map[string]string{"trust_token": "x"}, "only used with address"},
		{map[string]string{"address": "https://h:1", "trust_token": "x"}, "trust_token needs client_cert"},
		{map[string]string{"address": "https://h:1", "trust_token": "x", "client_cert": "c", "client_key": "k"}, "trust_token needs"},
		{map[string]string{"address": "https://h:1", "trust_token": "x", "client_cert": "c", "client_key": "k", "server_cert": "s"}, ""},
	} {
		err := validateRemote(tt.remote)
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("validateRemote(%v) = %v, want %q", tt.remote, err, tt.wantErr)
		}
	}
}

// TestImageCopyToHostB copies the tests' image from the main daemon to host B in push
// mode: once copied, then already present; its probe sees the alias; its undo removes
// the copy. When host B has the image already, only the alias is made and undone.
func TestImageCopyToHostB(t *testing.T) {
	hb := lxdtest.StartHostB(t)
	image := testImage(t)
	fingerprint := strings.TrimSpace(lxc(t, "image", "info", image))
	fingerprint = fingerprint[strings.Index(fingerprint, "Fingerprint: ")+len("Fingerprint: "):][:64]
	_, _ = hb.Lxc("image", "delete", fingerprint) // a copy an interrupted test left
	alias := testName("copy")
	task := &ImageCopy{Image: image, Alias: alias, To: hb.Remote()}
	t.Cleanup(func() { _, _ = hb.Lxc("image", "delete", fingerprint) })

	out, printed := mustValidateAndRun(t, task)
	if got := out["made"].AsString(); got != madeImage || out["fingerprint"].AsString() != fingerprint {
		t.Fatalf("made %q fingerprint %s, want %q %s\n%s", got, out["fingerprint"].AsString(), madeImage, fingerprint, printed)
	}
	if info, err := hb.Lxc("image", "info", alias); err != nil || !strings.Contains(info, fingerprint) {
		t.Fatalf("host B has no image %s under %q: %v", fingerprint, alias, err)
	}
	again, printed := mustValidateAndRun(t, task)
	if again["made"].AsString() != "" || !strings.Contains(printed, "already present") {
		t.Errorf("second run: made %q\n%s", again["made"].AsString(), printed)
	}
	if drift := probeOf(t, task, out); drift != "" {
		t.Errorf("probe: %s", drift)
	}

	// The image is on B now: a second alias is only an alias, and its undo keeps the image.
	second := &ImageCopy{Image: image, Alias: testName("copy"), To: hb.Remote()}
	out2, _ := mustValidateAndRun(t, second)
	if out2["made"].AsString() != madeAlias {
		t.Fatalf("made %q, want %q", out2["made"].AsString(), madeAlias)
	}
	undo(t, second, out2)
	if _, err := hb.Lxc("image", "info", second.Alias); err == nil {
		t.Errorf("alias %q is still on host B after its undo", second.Alias)
	}
	if _, err := hb.Lxc("image", "info", fingerprint); err != nil {
		t.Errorf("undoing the alias removed the image: %v", err)
	}

	undo(t, task, out)
	if _, err := hb.Lxc("image", "info", fingerprint); err == nil {
		t.Errorf("image %s is still on host B after the copy's undo", fingerprint)
	}
	if err := lxcQuiet("image", "info", image); err != nil {
		t.Errorf("the undo touched the source image: %v", err)
	}
	if drift := probeOf(t, task, out); !strings.Contains(drift, "is gone") {
		t.Errorf("probe after undo: %q", drift)
	}
}

func probeOf(t *testing.T, p tasks.Prober, out tasks.Outputs) string {
	t.Helper()
	env, _ := taskstest.NewEnv(t)
	drift, err := p.Probe(t.Context(), env, out)
	if err != nil {
		t.Fatalf("Probe() = %v", err)
	}
	return drift
}

func undo(t *testing.T, d tasks.Destroyer, out tasks.Outputs) {
	t.Helper()
	env, printed := taskstest.NewEnv(t)
	if err := d.Destroy(t.Context(), env, out); err != nil {
		t.Fatalf("Destroy() = %v\n%s", err, printed)
	}
}

// mustTrusted connects to remote and fails unless the server trusts the client.
func mustTrusted(t *testing.T, remote map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	srv, err := connect(ctx, remote)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := srv.GetInstanceNames(""); err != nil {
		t.Fatalf("list instances: %v", err)
	}
}

// untrust removes a client certificate from host B's trust store.
func untrust(t *testing.T, hb lxdtest.HostB, certPath string) {
	b, err := os.ReadFile(certPath)
	if err != nil {
		return
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return
	}
	sum := sha256.Sum256(block.Bytes)
	_, _ = hb.Lxc("config", "trust", "remove", hex.EncodeToString(sum[:]))
}

// forgeFingerprint returns token with another server certificate fingerprint in it.
func forgeFingerprint(t *testing.T, token string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(token)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["fingerprint"] = strings.Repeat("ab", 32)
	raw, _ = json.Marshal(m)
	return base64.StdEncoding.EncodeToString(raw)
}
