package image

import (
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestRegister(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	wantOutputs := map[string]map[string]cty.Type{
		"image_mirror": {"images": cty.Map(cty.String)},
		"image_build":  {"digest": cty.String, "reference": cty.String, "tarball": cty.String},
		"image_export": {"path": cty.String, "digest": cty.String},
	}
	for typeName, outputs := range wantOutputs {
		typ, ok := r.Lookup(typeName)
		if !ok {
			t.Errorf("type %q not registered", typeName)
			continue
		}
		taskstest.CheckType(t, *typ, outputs)
		taskstest.CheckExample(t, *typ, nil)
	}
	if err := Register(r); err == nil {
		t.Error("second Register succeeded, want a duplicate error")
	}
}

func list(s ...string) cty.Value {
	vals := make([]cty.Value, len(s))
	for i, v := range s {
		vals[i] = cty.StringVal(v)
	}
	return cty.TupleVal(vals)
}

func TestMirrorValidate(t *testing.T) {
	ok := list("docker.io/karmada/karmada-scheduler:v1.13.0")
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "list", Task: &Mirror{Images: ok, Registry: "localhost:32000"}},
		{Name: "map", Task: &Mirror{Images: cty.MapVal(map[string]cty.Value{"alpine:3.21": cty.StringVal("tools/alpine")}), Registry: "localhost:32000"}},
		{Name: "everything", Task: &Mirror{Images: ok, Registry: "localhost:32000", Naming: "flatten", Prefix: "a/b", Platforms: []string{"linux/arm/v7"}, Insecure: true, Parallelism: 8}},
		{Name: "no images", Task: &Mirror{Registry: "localhost:32000"}, Attr: "images", Msg: "required"},
		{Name: "empty list", Task: &Mirror{Images: cty.EmptyTupleVal, Registry: "localhost:32000"}, Attr: "images", Msg: "at least one"},
		{Name: "numbers", Task: &Mirror{Images: cty.NumberIntVal(3), Registry: "localhost:32000"}, Attr: "images", Msg: "want a list"},
		{Name: "bad source", Task: &Mirror{Images: list("UPPER/case:v1"), Registry: "localhost:32000"}, Attr: "images", Msg: `source "UPPER/case:v1"`},
		{Name: "empty source", Task: &Mirror{Images: list(""), Registry: "localhost:32000"}, Attr: "images", Msg: "must not be empty"},
		{Name: "same target", Task: &Mirror{Images: list("a.io/x/app:v1", "b.io/y/app:v1"), Registry: "localhost:32000", Naming: "flatten"}, Attr: "images", Msg: "both go to localhost:32000/app:v1"},
		{Name: "no registry", Task: &Mirror{Images: ok}, Attr: "registry", Msg: "not a registry"},
		{Name: "registry with path", Task: &Mirror{Images: ok, Registry: "localhost:32000/karmada"}, Attr: "registry", Msg: "put repository paths in prefix"},
		{Name: "naming", Task: &Mirror{Images: ok, Registry: "localhost:32000", Naming: "short"}, Attr: "naming", Msg: "keep, flatten"},
		{Name: "prefix", Task: &Mirror{Images: ok, Registry: "localhost:32000", Prefix: "/karmada"}, Attr: "prefix", Msg: "must not start or end with /"},
		{Name: "platform", Task: &Mirror{Images: ok, Registry: "localhost:32000", Platforms: []string{"amd64"}}, Attr: "platforms", Msg: "os/arch"},
		// path.Join would clean these into docker.io/… (the registry dropped): a push to Docker Hub.
		{Name: "prefix escapes registry", Task: &Mirror{Images: ok, Registry: "localhost:32000", Prefix: ".."}, Attr: "prefix", Msg: `"." or ".."`},
		{Name: "prefix with dot element", Task: &Mirror{Images: ok, Registry: "localhost:32000", Prefix: "a/./b"}, Attr: "prefix", Msg: `"." or ".."`},
		{Name: "map target escapes registry", Task: &Mirror{Images: cty.MapVal(map[string]cty.Value{"alpine:3.21": cty.StringVal("../../evil/x")}), Registry: "localhost:32000", Prefix: "a"}, Attr: "images", Msg: `"." or ".."`},
		{Name: "source path escapes registry", Task: &Mirror{Images: list("127.0.0.1:5000/../evil/x:v1"), Registry: "localhost:32000"}, Attr: "images", Msg: `"." or ".."`},
		{Name: "parallelism", Task: &Mirror{Images: ok, Registry: "localhost:32000", Parallelism: -1}, Attr: "parallelism", Msg: "at least 1"},
	})
}

// The target naming, including karmadactl's flat layout
// (REGISTRY/karmada-scheduler:TAG for --private-image-registry=REGISTRY).
func TestMirrorNaming(t *testing.T) {
	tests := []struct {
		src, naming, prefix, mapped string
		want                        string
	}{
		{"docker.io/karmada/karmada-controller-manager:v1.13.0", "keep", "", "", "localhost:32000/karmada/karmada-controller-manager:v1.13.0"},
		{"docker.io/karmada/karmada-controller-manager:v1.13.0", "flatten", "", "", "localhost:32000/karmada-controller-manager:v1.13.0"},
		{"registry.k8s.io/kube-apiserver:v1.31.3", "flatten", "karmada", "", "localhost:32000/karmada/kube-apiserver:v1.31.3"},
		{"alpine:3.21.0", "", "", "", "localhost:32000/library/alpine:3.21.0"},
		{"alpine", "flatten", "", "", "localhost:32000/alpine:latest"},
		{"quay.io/a/b:v1@sha256:" + strings.Repeat("a", 64), "", "", "", "localhost:32000/a/b:v1"},
		{"quay.io/a/b@sha256:" + strings.Repeat("a", 64), "", "", "", "localhost:32000/a/b@"},
		{"quay.io/a/b:v1", "flatten", "p", "x/y:v2", "localhost:32000/p/x/y:v2"},
		{"quay.io/a/b:v1", "", "", "x/y", "localhost:32000/x/y:v1"},
	}
	for _, tt := range tests {
		m := &Mirror{Registry: "localhost:32000", Naming: tt.naming, Prefix: tt.prefix}
		p, err := m.pair(tt.src, tt.mapped)
		if err != nil {
			t.Errorf("%s: %v", tt.src, err)
			continue
		}
		got := p.target.Name() + "@"
		if p.tag != "" {
			got = p.target.Name() + ":" + p.tag
		}
		if got != tt.want {
			t.Errorf("%s (%s, prefix %q, map %q) -> %s, want %s", tt.src, tt.naming, tt.prefix, tt.mapped, got, tt.want)
		}
	}
}

func TestBuildValidate(t *testing.T) {
	layer := map[string]string{"source": "bin/app", "destination": "/app"}
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "tarball", Task: &Build{Tarball: "x.tar", Tag: "app:dev"}},
		{Name: "push", Task: &Build{Push: "localhost:32000/app:dev", Layers: []map[string]string{layer}, ExposedPorts: []string{"80", "53/udp"}}},
		{Name: "nowhere", Task: &Build{}, Attr: "push", Msg: "set push, tarball or both"},
		{Name: "tarball without name", Task: &Build{Tarball: "x.tar"}, Attr: "tag", Msg: "needs a tag"},
		{Name: "bad push", Task: &Build{Push: "Bad:ref"}, Attr: "push", Msg: "tag reference"},
		{Name: "bad base", Task: &Build{Base: "UP:x", Push: "a/b:c"}, Attr: "base", Msg: ""},
		{Name: "layer without destination", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x"}}}, Attr: "layers", Msg: "element 0: source and destination are required"},
		{Name: "relative destination", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "app"}}}, Attr: "layers", Msg: "absolute"},
		{Name: "destination is the root", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "/etc/.."}}}, Attr: "layers", Msg: "image root"},
		{Name: "bad mode", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "/x", "mode": "rwx"}}}, Attr: "layers", Msg: "octal"},
		{Name: "unknown key", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "/x", "owner": "1"}}}, Attr: "layers", Msg: `unknown key "owner"`},
		{Name: "layer tarball", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"tarball": "rootfs.tar"}}}},
		{Name: "layer tarball with destination", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"tarball": "rootfs.tar", "destination": "/x"}}}, Attr: "layers", Msg: `element 0: key "destination" cannot be combined with tarball`},
		{Name: "empty layer tarball", Task: &Build{Push: "a/b:c", Layers: []map[string]string{{"tarball": ""}}}, Attr: "layers", Msg: "must name a tar file"},
		{Name: "port", Task: &Build{Push: "a/b:c", ExposedPorts: []string{"http"}}, Attr: "exposed_ports", Msg: "1 to 65535"},
		{Name: "protocol", Task: &Build{Push: "a/b:c", ExposedPorts: []string{"80/quic"}}, Attr: "exposed_ports", Msg: "tcp, udp or sctp"},
		{Name: "workdir", Task: &Build{Push: "a/b:c", Workdir: "app"}, Attr: "workdir", Msg: "absolute"},
		{Name: "env", Task: &Build{Push: "a/b:c", Env: map[string]string{"A=B": "1"}}, Attr: "env", Msg: "'='"},
		{Name: "platform", Task: &Build{Push: "a/b:c", Platform: "linux"}, Attr: "platform", Msg: "os/arch"},
	})
}

func TestExportValidate(t *testing.T) {
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "ok", Task: &Export{Image: "localhost:32000/app:v1", Path: "app.tar"}},
		{Name: "bad image", Task: &Export{Image: "", Path: "app.tar"}, Attr: "image", Msg: ""},
		{Name: "no path", Task: &Export{Image: "app:v1"}, Attr: "path", Msg: "must name a file"},
		{Name: "dir path", Task: &Export{Image: "app:v1", Path: "out/"}, Attr: "path", Msg: "must name a file"},
		{Name: "platform", Task: &Export{Image: "app:v1", Path: "a.tar", Platform: "x"}, Attr: "platform", Msg: "os/arch"},
	})
}
