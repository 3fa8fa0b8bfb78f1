package karmada

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/kube/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// fakeKarmadactl writes a shell script standing in for karmadactl: it appends its
// argv as one line to the returned record file, answers `version` with version,
// and runs the shell lines in cases (a case pattern each, e.g. "init") for the
// other subcommands. Init cannot complete without kubelets; the fake shows what
// flow runs and in which order.
func fakeKarmadactl(t *testing.T, version string, cases map[string]string) (bin, record string) {
	t.Helper()
	dir := t.TempDir()
	bin, record = filepath.Join(dir, "karmadactl"), filepath.Join(dir, "argv")
	var b strings.Builder
	b.WriteString("#!/bin/sh\nprintf '%s\\n' \"$*\" >>'" + record + "'\ncase \"$1\" in\n")
	b.WriteString("version) echo 'karmadactl version: version.Info{GitVersion:\"" + version + "\", GitCommit:\"unknown\"}' ;;\n")
	for pattern, body := range cases {
		b.WriteString(pattern + ")\n" + body + "\n;;\n")
	}
	b.WriteString("esac\n")
	if err := os.WriteFile(bin, []byte(b.String()), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, record
}

// recordingKarmadactl wraps the real binary: it records argv as fakeKarmadactl
// does and then runs real with it.
func recordingKarmadactl(t *testing.T, real string) (bin, record string) {
	t.Helper()
	dir := t.TempDir()
	bin, record = filepath.Join(dir, "karmadactl"), filepath.Join(dir, "argv")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>'" + record + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, record
}

// calls returns the recorded invocations, one argv line each.
func calls(t *testing.T, record string) []string {
	t.Helper()
	b, err := os.ReadFile(record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// subcommands returns the first word of each recorded invocation.
func subcommands(t *testing.T, record string) []string {
	var out []string
	for _, c := range calls(t, record) {
		out = append(out, strings.Fields(c + " -")[0])
	}
	return out
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyCRDs creates every CRD in the YAML files under paths (files or directories,
// walked recursively) on s and waits until each is established.
func applyCRDs(t *testing.T, s *kubetest.Server, paths ...string) {
	t.Helper()
	client := s.Dynamic(t)
	var names []string
	for _, root := range paths {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
			for {
				var obj map[string]any
				if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return err
				}
				if obj == nil {
					continue
				}
				crd := &unstructured.Unstructured{Object: obj}
				if _, err := client.Resource(crdResource).Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
					return err
				}
				names = append(names, crd.GetName())
			}
		})
		if err != nil {
			t.Fatalf("apply CRDs from %s: %v", root, err)
		}
	}
	for _, name := range names {
		waitEstablished(t, s, name)
	}
}

func waitEstablished(t *testing.T, s *kubetest.Server, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		crd, err := s.Dynamic(t).Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CRD %s not established: %v", name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
