package image

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
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
		if typ.Summary == "" || typ.Doc == "" || typ.Example == "" {
			t.Errorf("%s: Summary, Doc and Example must be set", typeName)
		}
		if len(typ.Outputs) != len(outputs) {
			t.Errorf("%s: %d outputs, want %d", typeName, len(typ.Outputs), len(outputs))
		}
		for _, o := range typ.Outputs {
			if want, ok := outputs[o.Name]; !ok || !o.Type.Equals(want) || o.Doc == "" {
				t.Errorf("%s output %q: type %s, doc %q", typeName, o.Name, o.Type.FriendlyName(), o.Doc)
			}
		}
		attrs, err := tasks.Attributes(typ.New())
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attrs {
			if a.Doc == "" {
				t.Errorf("%s attribute %q has no doc", typeName, a.Name)
			}
		}
	}
	if err := Register(r); err == nil {
		t.Error("second Register succeeded, want a duplicate error")
	}
}

// Each example is one task block that decodes into a valid task.
func TestExamplesDecode(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	for _, typeName := range r.Names() {
		typ, _ := r.Lookup(typeName)
		f, diags := hclsyntax.ParseConfig([]byte(typ.Example), typeName+".hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%s: parse example: %v", typeName, diags)
		}
		blocks := f.Body.(*hclsyntax.Body).Blocks
		if len(blocks) != 1 || blocks[0].Type != "task" || len(blocks[0].Labels) != 2 || blocks[0].Labels[0] != typeName {
			t.Fatalf("%s: example is not one task %q block:\n%s", typeName, typeName, typ.Example)
		}
		task := typ.New()
		if diags := gohcl.DecodeBody(blocks[0].Body, nil, task); diags.HasErrors() {
			t.Fatalf("%s: decode example: %v", typeName, diags)
		}
		if err := task.Validate(); err != nil {
			t.Errorf("%s: example does not validate: %v", typeName, err)
		}
	}
}

func list(s ...string) cty.Value {
	vals := make([]cty.Value, len(s))
	for i, v := range s {
		vals[i] = cty.StringVal(v)
	}
	return cty.TupleVal(vals)
}

func assertAttrError(t *testing.T, err error, attr, msg string) {
	t.Helper()
	if attr == "" {
		if err != nil {
			t.Fatalf("Validate() = %v, want nil", err)
		}
		return
	}
	var ae *tasks.AttrError
	if !errors.As(err, &ae) {
		t.Fatalf("Validate() = %v, want *tasks.AttrError on %q", err, attr)
	}
	if ae.Attr != attr || !strings.Contains(ae.Err.Error(), msg) {
		t.Errorf("Validate() = %q on %q, want %q on %q", ae.Err, ae.Attr, msg, attr)
	}
}

func TestMirrorValidate(t *testing.T) {
	ok := list("docker.io/karmada/karmada-scheduler:v1.13.0")
	tests := []struct {
		name     string
		m        Mirror
		wantAttr string
		wantMsg  string
	}{
		{"list", Mirror{Images: ok, Registry: "localhost:32000"}, "", ""},
		{"map", Mirror{Images: cty.MapVal(map[string]cty.Value{"alpine:3.21": cty.StringVal("tools/alpine")}), Registry: "localhost:32000"}, "", ""},
		{"everything", Mirror{Images: ok, Registry: "localhost:32000", Naming: "flatten", Prefix: "a/b", Platforms: []string{"linux/arm/v7"}, Insecure: true, Parallelism: 8}, "", ""},
		{"no images", Mirror{Registry: "localhost:32000"}, "images", "required"},
		{"empty list", Mirror{Images: cty.EmptyTupleVal, Registry: "localhost:32000"}, "images", "at least one"},
		{"numbers", Mirror{Images: cty.NumberIntVal(3), Registry: "localhost:32000"}, "images", "want a list"},
		{"bad source", Mirror{Images: list("UPPER/case:v1"), Registry: "localhost:32000"}, "images", `source "UPPER/case:v1"`},
		{"empty source", Mirror{Images: list(""), Registry: "localhost:32000"}, "images", "must not be empty"},
		{"same target", Mirror{Images: list("a.io/x/app:v1", "b.io/y/app:v1"), Registry: "localhost:32000", Naming: "flatten"}, "images", "both go to localhost:32000/app:v1"},
		{"no registry", Mirror{Images: ok}, "registry", "not a registry"},
		{"registry with path", Mirror{Images: ok, Registry: "localhost:32000/karmada"}, "registry", "put repository paths in prefix"},
		{"naming", Mirror{Images: ok, Registry: "localhost:32000", Naming: "short"}, "naming", "keep, flatten"},
		{"prefix", Mirror{Images: ok, Registry: "localhost:32000", Prefix: "/karmada"}, "prefix", "must not start or end with /"},
		{"platform", Mirror{Images: ok, Registry: "localhost:32000", Platforms: []string{"amd64"}}, "platforms", "os/arch"},
		{"parallelism", Mirror{Images: ok, Registry: "localhost:32000", Parallelism: -1}, "parallelism", "at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertAttrError(t, tt.m.Validate(), tt.wantAttr, tt.wantMsg) })
	}
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
	tests := []struct {
		name     string
		b        Build
		wantAttr string
		wantMsg  string
	}{
		{"tarball", Build{Tarball: "x.tar", Tag: "app:dev"}, "", ""},
		{"push", Build{Push: "localhost:32000/app:dev", Layers: []map[string]string{layer}, ExposedPorts: []string{"80", "53/udp"}}, "", ""},
		{"nowhere", Build{}, "push", "set push, tarball or both"},
		{"tarball without name", Build{Tarball: "x.tar"}, "tag", "needs a tag"},
		{"bad push", Build{Push: "Bad:ref"}, "push", "tag reference"},
		{"bad base", Build{Base: "UP:x", Push: "a/b:c"}, "base", ""},
		{"layer without destination", Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x"}}}, "layers", "element 0: source and destination are required"},
		{"relative destination", Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "app"}}}, "layers", "absolute"},
		{"bad mode", Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "/x", "mode": "rwx"}}}, "layers", "octal"},
		{"unknown key", Build{Push: "a/b:c", Layers: []map[string]string{{"source": "x", "destination": "/x", "owner": "1"}}}, "layers", `unknown key "owner"`},
		{"port", Build{Push: "a/b:c", ExposedPorts: []string{"http"}}, "exposed_ports", "1 to 65535"},
		{"protocol", Build{Push: "a/b:c", ExposedPorts: []string{"80/quic"}}, "exposed_ports", "tcp, udp or sctp"},
		{"workdir", Build{Push: "a/b:c", Workdir: "app"}, "workdir", "absolute"},
		{"env", Build{Push: "a/b:c", Env: map[string]string{"A=B": "1"}}, "env", "'='"},
		{"platform", Build{Push: "a/b:c", Platform: "linux"}, "platform", "os/arch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertAttrError(t, tt.b.Validate(), tt.wantAttr, tt.wantMsg) })
	}
}

func TestExportValidate(t *testing.T) {
	tests := []struct {
		name     string
		e        Export
		wantAttr string
		wantMsg  string
	}{
		{"ok", Export{Image: "localhost:32000/app:v1", Path: "app.tar"}, "", ""},
		{"bad image", Export{Image: "", Path: "app.tar"}, "image", ""},
		{"no path", Export{Image: "app:v1"}, "path", "must name a file"},
		{"dir path", Export{Image: "app:v1", Path: "out/"}, "path", "must name a file"},
		{"platform", Export{Image: "app:v1", Path: "a.tar", Platform: "x"}, "platform", "os/arch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assertAttrError(t, tt.e.Validate(), tt.wantAttr, tt.wantMsg) })
	}
}
