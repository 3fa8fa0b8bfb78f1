package karmada

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/command"
	"github.com/flowdev/flow/tasks/internal/output"
)

// PinnedVersion is the karmadactl version every flag table was checked against.
const PinnedVersion = "v1.13.0"

// binary is what Run needs to start karmadactl: the path and the version it must report.
type binary struct {
	path, version string
	env           map[string]string // added to flow's environment
}

func newBinary(path, version string) binary {
	if path == "" {
		path = "karmadactl"
	}
	if version == "" {
		version = PinnedVersion
	}
	return binary{path: path, version: version}
}

// validateVersion checks a karmadactl_version attribute.
func validateVersion(v string) error {
	if v != "" && !regexp.MustCompile(`^v\d+\.\d+\.\d+\S*$`).MatchString(v) {
		return attrErr("karmadactl_version", "%q is not a version such as %q", v, PinnedVersion)
	}
	return nil
}

// run starts karmadactl with args in its own process group, stopped on cancellation,
// and returns its captured stdout and stderr. The output is streamed to stdout and
// stderr; nil streams nowhere. Neither argv nor the output is logged, since they may
// carry a token. Callers name the operation in errors.
func (b binary) run(ctx context.Context, env *tasks.Env, args []string, stdout, stderr io.Writer) (string, string, error) {
	outCapture, errCapture := output.NewCapture(stdout), output.NewCapture(stderr)
	what := "command " + strconv.Quote(b.path)
	cmd := &command.Cmd{Argv: append([]string{b.path}, args...), Dir: env.WorkDir(""), Env: b.env, Stdout: outCapture, Stderr: errCapture, What: what}
	res, err := cmd.Run(ctx)
	if err != nil {
		return "", "", err
	}
	return outCapture.String(), errCapture.String(), res.Err(ctx, what, nil)
}

var gitVersion = regexp.MustCompile(`GitVersion:"([^"]*)"`)

// checkVersion fails unless `karmadactl version` reports b.version: the flag tables
// hold for that version only.
func (b binary) checkVersion(ctx context.Context, env *tasks.Env) error {
	stdout, stderr, err := b.run(ctx, env, []string{"version"}, nil, nil)
	if err != nil {
		return fmt.Errorf("check version of karmadactl %q: %w", b.path, withStderr(err, stderr))
	}
	if strings.Contains(stdout, `"`+b.version+`"`) {
		return nil
	}
	got := "an unknown version"
	if m := gitVersion.FindStringSubmatch(stdout); m != nil {
		got = m[1]
	}
	return fmt.Errorf("check version of karmadactl %q: it reports %s, want %s: flow's flags were checked against %s and another version may lack some; install %s, or set karmadactl_version after checking the flags",
		b.path, got, b.version, PinnedVersion, b.version)
}

// withStderr adds the last line of a failed command's stderr to err, for the
// commands whose output is not streamed.
func withStderr(err error, stderr string) error {
	s := strings.TrimSpace(stderr)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return err
	}
	return fmt.Errorf("%w: %s", err, s)
}
