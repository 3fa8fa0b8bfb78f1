package karmada

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// Token creates a bootstrap token in Karmada with `karmadactl token create
// --print-register-command`. It is the hcl config struct of the karmadactl_token
// task type.
type Token struct {
	Karmadactl        string   `hcl:"karmadactl,optional" doc:"Path of the karmadactl binary; default \"karmadactl\", looked up in PATH."`
	KarmadactlVersion string   `hcl:"karmadactl_version,optional" doc:"Version the binary must report; default \"v1.13.0\", the version flow's flags were checked against."`
	ExtraArgs         []string `hcl:"extra_args,optional" doc:"Further karmadactl token create arguments; they must not set a flag an attribute maps."`

	Kubeconfig  string         `hcl:"kubeconfig" doc:"Path of the Karmada API server's kubeconfig (--kubeconfig), e.g. karmadactl_init's kubeconfig output. Required: the register command is built from its server address and CA."`
	Context     string         `hcl:"context,optional" doc:"Context in the Karmada kubeconfig (--karmada-context); default its current-context."`
	TTL         tasks.Duration `hcl:"ttl,optional" doc:"How long the token lives, a duration such as \"2h\" (--ttl); \"0s\" never expires; default 24h."`
	Description string         `hcl:"token_description,optional" doc:"Human-readable note stored with the token (--description)."`
	Groups      []string       `hcl:"groups,optional" doc:"Extra groups the token authenticates as (--groups, joined with commas); default system:bootstrappers:karmada:default-cluster-token."`
	Usages      []string       `hcl:"usages,optional" doc:"Ways the token may be used (--usages, joined with commas); default signing and authentication."`
}

// tokenFlags is every flag karmadactl_token emits besides `token create
// --print-register-command`.
var tokenFlags = flagTable{
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "karmada-context", kindString},
	{"ttl", "ttl", kindDuration},
	{"token_description", "description", kindString},
	{"groups", "groups", kindList},
	{"usages", "usages", kindList},
}

func tokenType() tasks.Type {
	return tasks.Type{
		Name:    "karmadactl_token",
		Summary: "Create a Karmada bootstrap token and the karmadactl register command that uses it",
		Doc: `Runs karmadactl token create --print-register-command against the Karmada API server
(kubeconfig, context) and publishes the token, the CA certificate hash, the API
endpoint and the whole register command, for karmadactl_register. Each attribute
maps to one flag; extra_args carries anything else.

Every output is sensitive: redacted from what flow prints and never stored, so a
resumed run creates a new token. The command's output is never printed, and an
error shows its last line of stderr with anything shaped like a token replaced.`,
		New: func() tasks.Task { return &Token{} },
		Outputs: []tasks.Output{
			{Name: "token", Type: cty.String, Doc: "The bootstrap token, \"abcdef.0123456789abcdef\".", Sensitive: true},
			{Name: "ca_cert_hash", Type: cty.String, Doc: "Hash of the Karmada CA's public key, \"sha256:...\", for karmadactl_register's ca_cert_hash."},
			{Name: "api_endpoint", Type: cty.String, Doc: "host:port of the Karmada API server, for karmadactl_register's api_endpoint."},
			{Name: "register_command", Type: cty.String, Doc: "The karmadactl register command line as karmadactl printed it.", Sensitive: true},
		},
		Undo: "Not undone: the token stays on the Karmada control plane until its ttl expires.",
		Example: `task "karmadactl_token" "register" {
  kubeconfig = karmadactl_init.karmada.kubeconfig
  ttl        = "2h"
}`,
	}
}

// Validate checks the ttl, that the kubeconfig is named, and extra_args.
func (t *Token) Validate() error {
	if err := validateVersion(t.KarmadactlVersion); err != nil {
		return err
	}
	if t.Kubeconfig == "" {
		return attrErr("kubeconfig", "must not be empty: the register command is built from it")
	}
	return tokenFlags.validate(t, t.ExtraArgs, "print-register-command")
}

// Run creates the token. Nothing karmadactl prints reaches env.
func (t *Token) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	t = t.in(env)
	bin := newBinary(t.Karmadactl, t.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return nil, err
	}
	args := append(append([]string{"token", "create", "--print-register-command"}, tokenFlags.args(t)...), t.ExtraArgs...)
	stdout, stderr, err := bin.run(ctx, env, args, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("karmadactl token create: %w", withStderr(err, bootstrapToken.ReplaceAllString(stderr, hidden)))
	}
	reg, err := parseRegisterCommand(stdout)
	if err != nil {
		return nil, fmt.Errorf("karmadactl token create: %w", err)
	}
	fmt.Fprintln(env.Stdout, "karmadactl token create: bootstrap token created; its outputs are sensitive")
	return tasks.Outputs{
		"token":            cty.StringVal(reg.token),
		"ca_cert_hash":     cty.StringVal(reg.caCertHash),
		"api_endpoint":     cty.StringVal(reg.endpoint),
		"register_command": cty.StringVal(reg.command),
	}, nil
}

// bootstrapToken matches a bootstrap token, "[a-z0-9]{6}.[a-z0-9]{16}".
var bootstrapToken = regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`)

// registerCommand is what `token create --print-register-command` prints.
type registerCommand struct {
	command, endpoint, token, caCertHash string
}

// parseRegisterCommand reads the line "karmadactl register HOST:PORT --token TOKEN
// --discovery-token-ca-cert-hash sha256:HEX[,sha256:HEX]". Its errors never
// quote the output, which holds the token.
func parseRegisterCommand(out string) (registerCommand, error) {
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		i := slices.Index(fields, "register")
		if i < 0 || i+1 >= len(fields) {
			continue
		}
		reg := registerCommand{command: strings.Join(fields, " "), endpoint: fields[i+1]}
		for j := i + 2; j+1 < len(fields); j++ {
			switch fields[j] {
			case "--token":
				reg.token = fields[j+1]
			case "--discovery-token-ca-cert-hash":
				reg.caCertHash = fields[j+1]
			}
		}
		switch {
		case !bootstrapToken.MatchString(reg.token) || len(reg.token) != 23:
			return registerCommand{}, errors.New("register command has no well-formed --token")
		case !strings.HasPrefix(reg.caCertHash, "sha256:"):
			return registerCommand{}, errors.New("register command has no --discovery-token-ca-cert-hash of the form sha256:HEX")
		case strings.HasPrefix(reg.endpoint, "-"):
			return registerCommand{}, errors.New("register command has no API endpoint")
		}
		return reg, nil
	}
	return registerCommand{}, errors.New("no karmadactl register command in its output")
}

var _ tasks.Task = (*Token)(nil)
