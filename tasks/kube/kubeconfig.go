package kube

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
)

// Kubeconfig writes a kubeconfig file derived from another one: one context of it
// (minified by default), optionally with the cluster's server URL rewritten and the
// cluster, context and user renamed. It is the hcl config struct of the kubeconfig
// task type. The source holds credentials: they go to the file and nowhere else.
type Kubeconfig struct {
	Source      string `hcl:"source,optional" doc:"Path of the kubeconfig to read. Exactly one of source and content is required."`
	Content     string `hcl:"content,optional" doc:"Text of the kubeconfig to read, e.g. the stdout of a task that ran \"microk8s config\". It holds credentials: it is never printed. Exactly one of source and content is required."`
	Path        string `hcl:"path" doc:"File to write, with mode 0600; missing parent directories are created with mode 0700."`
	Context     string `hcl:"context,optional" doc:"Context of the source to use; default its current-context."`
	Server      string `hcl:"server,optional" doc:"New server URL (http:// or https://) of the cluster the context uses, e.g. a port forwarded to the host."`
	ClusterName string `hcl:"cluster_name,optional" doc:"New name of the context's cluster; the context keeps pointing at it."`
	ContextName string `hcl:"context_name,optional" doc:"New name of the context; it becomes the current-context either way."`
	UserName    string `hcl:"user_name,optional" doc:"New name of the context's user; the context keeps pointing at it."`
	Minify      *bool  `hcl:"minify,optional" doc:"Keep only the chosen context, its cluster and its user; default true."`
}

func kubeconfigType() tasks.Type {
	return tasks.Type{
		Name:    "kubeconfig",
		Summary: "Write a kubeconfig file derived from another kubeconfig",
		Doc: `Reads a kubeconfig from source (a file) or content (text), picks a context
(default its current-context), and writes path with mode 0600, atomically. With minify
(the default) the file holds only that context, its cluster and its user. server
replaces the URL of that context's cluster; cluster_name, context_name and user_name
rename the three, keeping the references between them. The chosen context becomes
the current-context.

If path already holds exactly the bytes the task would write, it is left untouched
and the task says "already present". Relative file references in a source file
(certificate-authority, client-certificate, client-key) are made absolute.
The kubeconfig's contents, which hold credentials, are never printed.`,
		New: func() tasks.Task { return &Kubeconfig{} },
		Outputs: []tasks.Output{
			{Name: "path", Type: cty.String, Doc: "The file written, as given in path.", Clean: true},
			{Name: "server", Type: cty.String, Doc: "Server URL of the context's cluster in the written file.", Clean: true},
			{Name: "context", Type: cty.String, Doc: "Name of the written file's current-context.", Clean: true},
		},
		Refresh:      "path holds exactly what the task writes",
		Undo:         "flow destroy removes the file at path (it holds credentials); a file that is gone already is skipped. Parent directories it created stay.",
		DestroyReads: []string{"path"},
		Example: `task "kubeconfig" "member1" {
  content      = lxd_exec.microk8s_config.stdout
  path         = "/root/member1.config"
  server       = "https://127.0.0.1:16441"
  cluster_name = "member1"
  context_name = "member1"
  user_name    = "member1-admin"
}`,
	}
}

// Validate checks that exactly one of source and content is set, that path is,
// that server is an http(s) URL with a host and that new names are not empty.
func (k *Kubeconfig) Validate() error {
	switch {
	case k.Source == "" && k.Content == "":
		// content = "" reads the same as no content: say so, since it is what a command
		// that printed nothing hands on.
		return &tasks.AttrError{Attr: "source", Err: errors.New("one of source or content is required (an empty content counts as none)")}
	case k.Source != "" && k.Content != "":
		return &tasks.AttrError{Attr: "content", Err: errors.New("source and content are mutually exclusive; set only one")}
	case k.Path == "":
		return &tasks.AttrError{Attr: "path", Err: errors.New("must not be empty")}
	}
	if k.Server != "" {
		if err := validateServerURL(k.Server); err != nil {
			return &tasks.AttrError{Attr: "server", Err: err}
		}
	}
	return nil
}

func validateServerURL(s string) error {
	if !strings.HasPrefix(s, "https://") && !strings.HasPrefix(s, "http://") {
		return fmt.Errorf("%q must start with https:// or http://", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a URL", s)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", s)
	}
	return nil
}

// minify reports the effective minify setting (default true).
func (k *Kubeconfig) minify() bool { return k.Minify == nil || *k.Minify }

var _ tasks.Task = (*Kubeconfig)(nil)
