package kube

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Run reads the source, derives the kubeconfig and writes it to path unless path
// already holds exactly those bytes.
func (k *Kubeconfig) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, k.errorf("not started: %w", err)
	}
	src, err := k.load(env)
	if err != nil {
		return nil, k.errorf("%w", err)
	}
	cfg, err := k.derive(src)
	if err != nil {
		return nil, k.errorf("%w", err)
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, k.errorf("encode: %w", err)
	}
	out := tasks.Outputs{
		"path":    cty.StringVal(k.Path),
		"server":  cty.StringVal(cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server),
		"context": cty.StringVal(cfg.CurrentContext),
	}
	present, err := sameFile(env.InDir(k.Path), data)
	if err != nil {
		return nil, k.errorf("%w", err)
	}
	if present {
		fmt.Fprintf(env.Stdout, "kubeconfig %s already present\n", k.Path)
		return out, nil
	}
	if err := writeFileAtomic(env.InDir(k.Path), data); err != nil {
		return nil, k.errorf("%w", err)
	}
	fmt.Fprintf(env.Stdout, "kubeconfig %s written: context %q, server %s\n", k.Path, cfg.CurrentContext, out["server"].AsString())
	return out, nil
}

// errorf prefixes an error with the file the task writes.
func (k *Kubeconfig) errorf(format string, args ...any) error {
	return fmt.Errorf("kubeconfig %q: "+format, append([]any{k.Path}, args...)...)
}

// load parses source (in env's directory) or content. Parse errors of content keep
// only their first line, which is the YAML or JSON reason, never the text itself.
func (k *Kubeconfig) load(env *tasks.Env) (*clientcmdapi.Config, error) {
	if k.Source != "" {
		cfg, err := clientcmd.LoadFromFile(env.InDir(k.Source))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("source %q does not exist", k.Source)
		}
		if err != nil {
			return nil, fmt.Errorf("read source %q: %w", k.Source, parseError(err))
		}
		// The written file lives elsewhere: relative references would break.
		if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
			return nil, fmt.Errorf("resolve paths in source %q: %w", k.Source, err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.Load([]byte(k.Content))
	if err != nil {
		return nil, fmt.Errorf("parse content: %w", parseError(err))
	}
	return cfg, nil
}

// sameFile reports whether path holds exactly data, and then makes sure its mode
// is 0600 without touching its contents.
func sameFile(path string, data []byte) (bool, error) {
	if drift, err := fileDrift(path, path, data); err != nil || drift != "" {
		return false, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false, fmt.Errorf("stat existing file: %w", err)
	}
	if fi.Mode().Perm() != 0o600 {
		if err := os.Chmod(path, 0o600); err != nil {
			return false, fmt.Errorf("set mode 0600: %w", err)
		}
	}
	return true, nil
}

// Destroy removes the file the task wrote: a kubeconfig holds credentials, and one left
// behind would point at a cluster that is gone.
func (k *Kubeconfig) Destroy(_ context.Context, env *tasks.Env, _ tasks.Outputs) error {
	if err := os.Remove(env.InDir(k.Path)); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(env.Stdout, "%s already absent\n", k.Path)
		return nil
	} else if err != nil {
		return fmt.Errorf("remove kubeconfig: %w", err)
	}
	fmt.Fprintf(env.Stdout, "removed %s\n", k.Path)
	return nil
}

var _ tasks.Destroyer = (*Kubeconfig)(nil)

// fileDrift says how path differs from data: "" when it holds exactly data. shown is
// how the drift names the file: as the flow wrote it.
func fileDrift(path, shown string, data []byte) (string, error) {
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return shown + " is gone", nil
	case err != nil:
		return "", fmt.Errorf("read %s: %w", shown, err)
	case !bytes.Equal(old, data):
		return shown + " does not hold what the task writes", nil
	}
	return "", nil
}
