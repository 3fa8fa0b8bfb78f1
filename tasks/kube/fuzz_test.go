package kube

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/flowdev/flow/tasks"
)

// fuzzSecret stands for the credentials a kubeconfig holds: the seeds carry it as a
// token, a password and key data, and no error may quote it.
const fuzzSecret = "s3cr3t-t0ken-value"

// FuzzKubeconfig feeds any text to the kubeconfig task's parsing (content and
// source) and to the connection every Kubernetes task loads (RESTConfig). Whatever
// the text: no panic, no hang, errors are one line and never quote fuzzSecret, and a
// derived kubeconfig that is written reads back with the same context and server.
// The seed corpus is testdata/fuzz/FuzzKubeconfig.
func FuzzKubeconfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		src := filepath.Join(dir, "source.config")
		if err := writeFileAtomic(src, []byte(content)); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, k := range []*Kubeconfig{
				{Content: content, Path: filepath.Join(dir, "out.config")},
				{Source: src, Path: filepath.Join(dir, "out.config"), Server: "https://127.0.0.1:16441", ClusterName: "c", UserName: "u", ContextName: "x"},
			} {
				checkDerive(t, k)
			}
			if _, err := RESTConfig(src, ""); err != nil {
				checkError(t, "RESTConfig", err)
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("parsing did not finish within 10s")
		}
	})
}

// checkDerive runs what the kubeconfig task runs before writing, and checks that
// what it would write reads back.
func checkDerive(t *testing.T, k *Kubeconfig) {
	src, err := k.load(&tasks.Env{})
	if err != nil {
		checkError(t, "load", err)
		return
	}
	cfg, err := k.derive(src)
	if err != nil {
		checkError(t, "derive", err)
		return
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		checkError(t, "write", err)
		return
	}
	back, err := clientcmd.Load(data)
	if err != nil {
		t.Fatalf("the derived kubeconfig does not read back: %v", err)
	}
	if back.CurrentContext != cfg.CurrentContext {
		t.Fatalf("current-context %q reads back as %q", cfg.CurrentContext, back.CurrentContext)
	}
	kctx, ok := back.Contexts[back.CurrentContext]
	if !ok {
		t.Fatalf("context %q is lost on reading back", back.CurrentContext)
	}
	cluster, ok := back.Clusters[kctx.Cluster]
	want := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server
	if !ok || cluster.Server != want {
		t.Fatalf("server %q does not read back (cluster %q)", want, kctx.Cluster)
	}
}

func checkError(t *testing.T, what string, err error) {
	msg := err.Error()
	// An unknown apiVersion or kind is quoted, and rightly: neither is a credential
	// (the fuzzer moved the secret there; testdata/fuzz/FuzzKubeconfig/65e4368118841791).
	if strings.Contains(msg, fuzzSecret) && !strings.Contains(msg, "is registered for version") {
		t.Fatalf("%s: the error quotes the secret: %s", what, msg)
	}
	if strings.Contains(msg, "\n") {
		t.Fatalf("%s: the error spans lines: %q", what, msg)
	}
}
