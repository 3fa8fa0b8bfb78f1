package host

import (
	"strings"
	"testing"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

// TestProbeAnswer: a plugin's answer to a probe or a check is drift only when it says
// so, and an error it reports stays an error: never "no drift", which would let a
// success stand on an object nobody looked at.
func TestProbeAnswer(t *testing.T) {
	tests := []struct {
		name    string
		res     *pluginpb.CheckResponse
		drift   string
		wantErr string
	}{
		{"present", &pluginpb.CheckResponse{State: pluginpb.CheckResponse_PRESENT}, "", ""},
		{"differs", &pluginpb.CheckResponse{State: pluginpb.CheckResponse_DIFFERS, Detail: "size 3"}, "it differs: size 3", ""},
		{"gone", &pluginpb.CheckResponse{State: pluginpb.CheckResponse_ABSENT}, "it is gone", ""},
		{"no state", &pluginpb.CheckResponse{}, "it is gone", ""},
		{"an error", &pluginpb.CheckResponse{State: pluginpb.CheckResponse_PRESENT, Error: "cannot read /x"}, "", "probe: cannot read /x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			drift, err := probeAnswer("probe", tt.res)
			if drift != tt.drift {
				t.Errorf("drift %q, want %q", drift, tt.drift)
			}
			if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
}
