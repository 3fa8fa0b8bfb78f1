package cli

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// flowArgs runs the CLI with exactly args (the harness adds --state, which cobra does
// not take after --version on a command that has no run of its own).
func flowArgs(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := New(testRegistry(t), &stdout, &stderr).Execute(args)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: ExitCode(err), err: err}
}

// TestVersion: flow version and flow --version print the same line: the module
// version, the VCS revision and whether the tree was modified, when the build
// recorded them, and the Go version.
func TestVersion(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	// The test binary's own build information: the Go version.
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := flowArgs(t, args...)
		if r.code != ExitOK || !strings.HasPrefix(r.stdout, "flow ") || !strings.HasSuffix(r.stdout, " "+runtime.Version()+" "+platform+"\n") || r.stderr != "" {
			t.Errorf("flow %s: exit %d, stdout %q, stderr %q", args[0], r.code, r.stdout, r.stderr)
		}
	}

	defer func(orig func() (*debug.BuildInfo, bool)) { readBuildInfo = orig }(readBuildInfo)
	for _, tt := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"released", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345"}, {Key: "vcs.modified", Value: "false"}}},
			"flow v1.4.0 (revision 3f9c2a1b7d4e) go1.26.8 " + platform + "\n"},
		{"modified tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345"}, {Key: "vcs.modified", Value: "true"}}},
			"flow (devel) (revision 3f9c2a1b7d4e, modified) go1.26.8 " + platform + "\n"},
		{"no VCS information", &debug.BuildInfo{GoVersion: "go1.26.8"},
			"flow (devel) go1.26.8 " + platform + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			readBuildInfo = func() (*debug.BuildInfo, bool) { return tt.info, true }
			for _, args := range [][]string{{"version"}, {"--version"}} {
				if r := flowArgs(t, args...); r.code != ExitOK || r.stdout != tt.want {
					t.Errorf("flow %s: exit %d, %q, want %q", args[0], r.code, r.stdout, tt.want)
				}
			}
		})
	}
	if r := flowArgs(t, "version", "extra"); r.code != ExitInvalid {
		t.Errorf("flow version extra: exit %d, want %d", r.code, ExitInvalid)
	}
}
