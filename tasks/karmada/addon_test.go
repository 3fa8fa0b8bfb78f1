package karmada

import (
	"slices"
	"testing"
)

// The sidecar listens on each loopback address and port given (127.0.0.1 for a
// bare port), in a stable order, and its container exits when one socat does.
func TestAddonForwarder(t *testing.T) {
	c := addon(nil).forwarder()
	want := []string{"bash", "-c", "set -u\n" +
		"socat TCP-LISTEN:16441,bind=127.0.0.1,fork,reuseaddr TCP:10.1.0.1:16441 &\n" +
		"socat TCP-LISTEN:16442,bind=127.0.0.1,fork,reuseaddr TCP:10.1.0.1:16442 &\n" +
		"wait -n\nexit 1\n"}
	if got := c["command"].([]string); !slices.Equal(got, want) {
		t.Errorf("command:\n%q\nwant\n%q", got, want)
	}
	if c["name"] != forwarderName || c["image"] != "localhost:32000/socat:1.7.4" {
		t.Errorf("container %v", c)
	}
}

func TestAddonDeployment(t *testing.T) {
	for _, tc := range []struct {
		addon, cluster, want string
	}{
		{"karmada-search", "", "karmada-search"},
		{"karmada-metrics-adapter", "", "karmada-metrics-adapter"},
		{estimatorAddon, "member2", "karmada-scheduler-estimator-member2"},
	} {
		a := &Addon{Addon: tc.addon, Cluster: tc.cluster}
		if got := a.deployment(); got != tc.want {
			t.Errorf("%s %s: deployment %q, want %q", tc.addon, tc.cluster, got, tc.want)
		}
	}
}
