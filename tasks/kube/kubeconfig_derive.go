package kube

import (
	"errors"
	"fmt"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// derive picks the context from src, minifies, renames and rewrites the server.
// It may modify src, which the caller no longer uses.
func (k *Kubeconfig) derive(src *clientcmdapi.Config) (*clientcmdapi.Config, error) {
	name := k.Context
	if name == "" {
		name = src.CurrentContext
		if name == "" {
			return nil, errors.New("source has no current-context; set context")
		}
	}
	kctx, ok := src.Contexts[name]
	if !ok {
		return nil, fmt.Errorf("context %q not found in source", name)
	}
	if _, ok := src.Clusters[kctx.Cluster]; !ok {
		return nil, fmt.Errorf("context %q: cluster %q not found in source", name, kctx.Cluster)
	}
	if _, ok := src.AuthInfos[kctx.AuthInfo]; kctx.AuthInfo != "" && !ok {
		return nil, fmt.Errorf("context %q: user %q not found in source", name, kctx.AuthInfo)
	}
	cfg := src
	if k.minify() {
		cfg = minified(src, name)
	}
	cfg.CurrentContext = name
	if err := k.rename(cfg); err != nil {
		return nil, err
	}
	if k.Server != "" {
		cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server = k.Server
	}
	return cfg, nil
}

// minified returns a config holding only context name, its cluster and its user.
func minified(src *clientcmdapi.Config, name string) *clientcmdapi.Config {
	kctx := src.Contexts[name]
	cfg := clientcmdapi.NewConfig()
	cfg.Preferences = src.Preferences
	cfg.Contexts[name] = kctx
	cfg.Clusters[kctx.Cluster] = src.Clusters[kctx.Cluster]
	if kctx.AuthInfo != "" {
		cfg.AuthInfos[kctx.AuthInfo] = src.AuthInfos[kctx.AuthInfo]
	}
	return cfg
}

// rename applies cluster_name, user_name and context_name to the current context
// and what it points at, updating every reference to the old names.
func (k *Kubeconfig) rename(cfg *clientcmdapi.Config) error {
	kctx := cfg.Contexts[cfg.CurrentContext]
	if k.ClusterName != "" && k.ClusterName != kctx.Cluster {
		if err := renameEntry(cfg.Clusters, kctx.Cluster, k.ClusterName, "cluster"); err != nil {
			return err
		}
		for _, c := range cfg.Contexts {
			if c.Cluster == kctx.Cluster {
				c.Cluster = k.ClusterName
			}
		}
	}
	if k.UserName != "" && k.UserName != kctx.AuthInfo {
		if kctx.AuthInfo == "" {
			return fmt.Errorf("user_name: context %q has no user to rename", cfg.CurrentContext)
		}
		if err := renameEntry(cfg.AuthInfos, kctx.AuthInfo, k.UserName, "user"); err != nil {
			return err
		}
		old := kctx.AuthInfo
		for _, c := range cfg.Contexts {
			if c.AuthInfo == old {
				c.AuthInfo = k.UserName
			}
		}
	}
	if k.ContextName != "" && k.ContextName != cfg.CurrentContext {
		if err := renameEntry(cfg.Contexts, cfg.CurrentContext, k.ContextName, "context"); err != nil {
			return err
		}
		cfg.CurrentContext = k.ContextName
	}
	return nil
}

// renameEntry moves m[from] to m[to]; without minify, to may already be taken.
func renameEntry[V any](m map[string]V, from, to, what string) error {
	if _, taken := m[to]; taken {
		return fmt.Errorf("rename %s %q to %q: the source already has a %s of that name", what, from, to, what)
	}
	m[to] = m[from]
	delete(m, from)
	return nil
}

// parseError reduces a kubeconfig parse error to its reason. Decoders may quote
// the input around the offending byte, a key that is a mapping or sequence
// ("invalid map key: map[...]{...}") or a mistagged value ("!!str `...`"), and the
// input holds credentials.
func parseError(err error) error {
	msg := err.Error()
	msg, _, _ = strings.Cut(msg, "\n")
	// " in list": client-go prints the whole list after a duplicate name, credentials
	// included (testdata/fuzz/FuzzKubeconfig/e0b05258ad19a3b3).
	for _, marker := range []string{", error found in #", "|", " in '", ` in "`, ": map[", ": []", ": [", " in list", " `"} {
		if i := strings.Index(msg, marker); i >= 0 {
			msg = msg[:i]
		}
	}
	return errors.New(strings.TrimSpace(msg))
}
