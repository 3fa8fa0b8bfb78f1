package karmada

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
)

// registerFixture is what karmadactl v1.13.0 token create --print-register-command
// prints (pkg/karmadactl/util/bootstraptoken GenerateRegisterCommand).
const registerFixture = "karmadactl register 172.18.0.5:5443 --token t8xfio.640u9gp9obc72v5d --discovery-token-ca-cert-hash sha256:9cfa542ff48f43793d1816b1dd0a78ad574e349d8f6e005e6e32e8ab528e4244\n"

func TestParseRegisterCommand(t *testing.T) {
	cases := []struct {
		name, out string
		want      registerCommand
		err       string
	}{
		{"karmadactl output", registerFixture, registerCommand{
			command:    strings.TrimSpace(registerFixture),
			endpoint:   "172.18.0.5:5443",
			token:      "t8xfio.640u9gp9obc72v5d",
			caCertHash: "sha256:9cfa542ff48f43793d1816b1dd0a78ad574e349d8f6e005e6e32e8ab528e4244",
		}, ""},
		{"after a warning, two hashes", "W0101 warning\nkarmadactl-v1.13.0 register [::1]:443 --token t8xfio.640u9gp9obc72v5d --discovery-token-ca-cert-hash sha256:01,sha256:02\n",
			registerCommand{
				command:  "karmadactl-v1.13.0 register [::1]:443 --token t8xfio.640u9gp9obc72v5d --discovery-token-ca-cert-hash sha256:01,sha256:02",
				endpoint: "[::1]:443", token: "t8xfio.640u9gp9obc72v5d", caCertHash: "sha256:01,sha256:02",
			}, ""},
		{"token only", "t8xfio.640u9gp9obc72v5d\n", registerCommand{}, "no karmadactl register command"},
		{"no hash", "karmadactl register 1.2.3.4:5443 --token t8xfio.640u9gp9obc72v5d\n", registerCommand{}, "no --discovery-token-ca-cert-hash"},
		{"bad token", "karmadactl register 1.2.3.4:5443 --token SECRET --discovery-token-ca-cert-hash sha256:01\n", registerCommand{}, "no well-formed --token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseRegisterCommand(c.out)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || strings.Contains(err.Error(), "t8xfio") || strings.Contains(err.Error(), "SECRET") {
					t.Fatalf("err = %v, want %q without the token", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// Run publishes the parsed fixture and prints none of it.
func TestTokenRun_FakeKarmadactl(t *testing.T) {
	bin, record := fakeKarmadactl(t, "v1.13.0", map[string]string{
		"token": "printf '%s' '" + registerFixture + "'\necho 'I0101 token t8xfio.640u9gp9obc72v5d created' >&2",
	})
	env, buf := taskstest.NewEnv(t)
	out, err := (&Token{Karmadactl: bin, Kubeconfig: "/k/kc", TTL: "1h"}).Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if out["token"].AsString() != "t8xfio.640u9gp9obc72v5d" || out["api_endpoint"].AsString() != "172.18.0.5:5443" ||
		!strings.HasPrefix(out["ca_cert_hash"].AsString(), "sha256:9cfa") || !strings.Contains(out["register_command"].AsString(), "--token t8xfio") {
		t.Errorf("outputs = %v", out)
	}
	if log := buf.String(); strings.Contains(log, "t8xfio") || strings.Contains(log, "9cfa") {
		t.Errorf("printed the command's output:\n%s", log)
	}
	want := []string{"version", "token create --print-register-command --kubeconfig=/k/kc --ttl=1h"}
	if got := calls(t, record); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("karmadactl calls = %q, want %q", got, want)
	}
}

// A failure shows stderr's last line with the token hidden.
func TestTokenRunFailure_FakeKarmadactl(t *testing.T) {
	bin, _ := fakeKarmadactl(t, "v1.13.0", map[string]string{
		"token": "echo 'error: failed to get register command for t8xfio.640u9gp9obc72v5d' >&2; exit 1",
	})
	env, buf := taskstest.NewEnv(t)
	_, err := (&Token{Karmadactl: bin, Kubeconfig: "/k/kc"}).Run(t.Context(), env)
	if err == nil || !strings.Contains(err.Error(), "failed to get register command for (sensitive)") || strings.Contains(err.Error(), "t8xfio") {
		t.Errorf("err = %v, want the last stderr line with the token hidden", err)
	}
	if strings.Contains(buf.String(), "t8xfio") {
		t.Errorf("printed the token:\n%s", buf)
	}
}

// A karmadactl of another version fails every type before it does anything.
func TestBadVersion_FakeKarmadactl(t *testing.T) {
	bin, record := fakeKarmadactl(t, "v1.12.2", nil)
	env, _ := taskstest.NewEnv(t)
	for name, run := range map[string]func() error{
		"token": func() error { _, err := (&Token{Karmadactl: bin, Kubeconfig: "/k"}).Run(t.Context(), env); return err },
		"init":  func() error { _, err := (&Init{Karmadactl: bin}).Run(t.Context(), env); return err },
		"join":  func() error { _, err := (&Join{Karmadactl: bin, Cluster: "m"}).Run(t.Context(), env); return err },
		"register": func() error {
			_, err := (&Registration{Karmadactl: bin, ClusterName: "m", Token: goodToken}).Run(t.Context(), env)
			return err
		},
	} {
		err := run()
		if err == nil || !strings.Contains(err.Error(), "it reports v1.12.2, want v1.13.0") {
			t.Errorf("%s: err = %v, want the version error", name, err)
		}
	}
	if got := subcommands(t, record); strings.Join(got, " ") != "version version version version" {
		t.Errorf("karmadactl calls = %q, want only version checks", got)
	}
}

// A cancelled run stops karmadactl's process group promptly.
func TestTokenCancel_FakeKarmadactl(t *testing.T) {
	bin, _ := fakeKarmadactl(t, "v1.13.0", map[string]string{"token": "sleep 60"})
	env, _ := taskstest.NewEnv(t)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := (&Token{Karmadactl: bin, Kubeconfig: "/k"}).Run(ctx, env)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("err = %v after %s, want a prompt deadline error", err, time.Since(start))
	}
}
