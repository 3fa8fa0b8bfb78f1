package lxd

import (
	"errors"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Validate is offline: these run without touching the daemon.
func TestValidateTypesA(t *testing.T) {
	no := false
	dev := map[string]map[string]string{"d": {"type": "disk", "path": "/d", "source": "/tmp"}}
	tests := []struct {
		name     string
		task     tasks.Task
		wantAttr string // "" means valid
		wantMsg  string
	}{
		{"profile", &Profile{Name: "p", Config: map[string]string{"a": "b"}, Devices: dev}, "", ""},
		{"profile no name", &Profile{}, "name", "must not be empty"},
		{"profile device without type", &Profile{Name: "p", Devices: map[string]map[string]string{"d": {"path": "/d"}}}, "devices", `device "d" needs a type`},
		{"profile bad remote", &Profile{Name: "p", Remote: map[string]string{"adress": "x"}}, "remote", `unknown key "adress"`},

		{"launch local", &Launch{Name: "m1", Image: "busybox"}, "", ""},
		{"launch full", &Launch{Name: "m1", Image: "ubuntu:22.04", Profiles: []string{"default", "k8s"}, Devices: dev, WaitFor: []string{"true"}, WaitTimeout: "3m"}, "", ""},
		{"launch image_server", &Launch{Name: "m1", Image: "debian/12", ImageServer: map[string]string{"url": "https://images.example.org", "protocol": "lxd"}}, "", ""},
		{"launch no name", &Launch{Image: "busybox"}, "name", "must not be empty"},
		{"launch name with dot", &Launch{Name: "m.1", Image: "busybox"}, "name", "only letters, digits and hyphens"},
		{"launch name starts with digit", &Launch{Name: "1m", Image: "busybox"}, "name", "must not start with a digit"},
		{"launch no image", &Launch{Name: "m1"}, "image", "must not be empty"},
		{"launch unknown remote", &Launch{Name: "m1", Image: "nosuch:22.04"}, "image", `unknown remote "nosuch"`},
		{"launch remote without alias", &Launch{Name: "m1", Image: "ubuntu:"}, "image", "names no image"},
		{"launch remote and image_server", &Launch{Name: "m1", Image: "ubuntu:22.04", ImageServer: map[string]string{"url": "https://x"}}, "image", "image_server is set"},
		{"launch image_server http", &Launch{Name: "m1", Image: "x", ImageServer: map[string]string{"url": "http://x"}}, "image_server", "must start with https://"},
		{"launch image_server protocol", &Launch{Name: "m1", Image: "x", ImageServer: map[string]string{"url": "https://x", "protocol": "oci"}}, "image_server", "simplestreams or lxd"},
		{"launch image_server key", &Launch{Name: "m1", Image: "x", ImageServer: map[string]string{"url": "https://x", "proto": "lxd"}}, "image_server", `unknown key "proto"`},
		{"launch empty profile", &Launch{Name: "m1", Image: "x", Profiles: []string{""}}, "profiles", "must not be empty"},
		{"launch empty wait_for", &Launch{Name: "m1", Image: "x", WaitFor: []string{}}, "wait_for", "must name a program"},
		{"launch bad wait_timeout", &Launch{Name: "m1", Image: "x", WaitTimeout: "soon"}, "wait_timeout", "not a duration"},
		{"launch negative wait_timeout", &Launch{Name: "m1", Image: "x", WaitTimeout: "-1s"}, "wait_timeout", "must be positive"},

		{"delete", &Delete{Instances: []string{"a", "b"}, Profiles: []string{"p"}, Images: []string{"i"}, Force: &no}, "", ""},
		{"delete nothing", &Delete{}, "instances", "nothing to delete"},
		{"delete empty name", &Delete{Profiles: []string{""}}, "profiles", "must not be empty"},
		{"delete twice", &Delete{Images: []string{"i", "i"}}, "images", `"i" is listed twice`},

		{"import unified", &ImageImport{File: "x.tar.gz", Alias: "x"}, "", ""},
		{"import split", &ImageImport{Metadata: "m.tar.xz", Rootfs: "r.squashfs", Alias: "x"}, "", ""},
		{"import nothing", &ImageImport{Alias: "x"}, "file", "one of file or metadata + rootfs is required"},
		{"import both", &ImageImport{File: "x", Metadata: "m", Rootfs: "r", Alias: "x"}, "file", "mutually exclusive"},
		{"import metadata only", &ImageImport{Metadata: "m", Alias: "x"}, "rootfs", "metadata needs rootfs"},
		{"import rootfs only", &ImageImport{Rootfs: "r", Alias: "x"}, "metadata", "rootfs needs metadata"},
		{"import no alias", &ImageImport{File: "x"}, "alias", "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.task.Validate()
			if tt.wantAttr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ae *tasks.AttrError
			if !errors.As(err, &ae) {
				t.Fatalf("Validate() = %v, want *tasks.AttrError", err)
			}
			if ae.Attr != tt.wantAttr || !strings.Contains(ae.Err.Error(), tt.wantMsg) {
				t.Errorf("Validate() = %q on %q, want %q on %q", ae.Err, ae.Attr, tt.wantMsg, tt.wantAttr)
			}
		})
	}
}

// Each type registers with docs, outputs and an example that is one task
// block using only its own attributes and the engine's.
func TestRegisterTypesA(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for _, name := range []string{"lxd_profile", "lxd_launch", "lxd_delete", "lxd_image_import"} {
		t.Run(name, func(t *testing.T) {
			typ, ok := r.Lookup(name)
			if !ok {
				t.Fatalf("%s not registered", name)
			}
			if typ.Summary == "" || typ.Doc == "" || len(typ.Outputs) == 0 {
				t.Errorf("Summary, Doc and Outputs must be set: %+v", typ)
			}
			for _, o := range typ.Outputs {
				if o.Doc == "" {
					t.Errorf("output %q has no doc", o.Name)
				}
			}
			attrs, err := tasks.Attributes(typ.New())
			if err != nil {
				t.Fatal(err)
			}
			known := map[string]bool{}
			for _, a := range attrs {
				known[a.Name] = true
				if a.Doc == "" {
					t.Errorf("attribute %q has no doc", a.Name)
				}
				if a.Name == "remote" && (a.Doc != RemoteDoc || !a.Type.Equals(cty.Map(cty.String))) {
					t.Errorf("remote: doc %q type %s, want RemoteDoc and map(string)", a.Doc, a.Type.FriendlyName())
				}
			}
			if !known["remote"] {
				t.Error("no remote attribute")
			}
			f, diags := hclsyntax.ParseConfig([]byte(typ.Example), "example.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatalf("parse example: %v", diags)
			}
			blocks := f.Body.(*hclsyntax.Body).Blocks
			if len(blocks) != 1 || blocks[0].Type != "task" || len(blocks[0].Labels) != 2 || blocks[0].Labels[0] != name {
				t.Fatalf("example is not one `task %q \"NAME\"` block:\n%s", name, typ.Example)
			}
			for attr := range blocks[0].Body.Attributes {
				if !known[attr] && !tasks.IsMetaAttribute(attr) {
					t.Errorf("example sets unknown attribute %q", attr)
				}
			}
		})
	}
}
