package lxd

import (
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

// Validate is offline: these run without touching the daemon.
func TestValidateTypesA(t *testing.T) {
	no := false
	dev := map[string]map[string]string{"d": {"type": "disk", "path": "/d", "source": "/tmp"}}
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "profile", Task: &Profile{Name: "p", Config: map[string]string{"a": "b"}, Devices: dev}},
		{Name: "profile no name", Task: &Profile{}, Attr: "name", Msg: "must not be empty"},
		{Name: "profile device without type", Task: &Profile{Name: "p", Devices: map[string]map[string]string{"d": {"path": "/d"}}}, Attr: "devices", Msg: `device "d" needs a type`},
		{Name: "profile name with slash", Task: &Profile{Name: "a/b"}, Attr: "name", Msg: `"a/b" must not contain "/"`},
		{Name: "profile name dot dot", Task: &Profile{Name: ".."}, Attr: "name", Msg: `".." is not a valid profile name`},
		{Name: "profile bad remote", Task: &Profile{Name: "p", Remote: map[string]string{"adress": "x"}}, Attr: "remote", Msg: `unknown key "adress"`},

		{Name: "launch local", Task: &Launch{Name: "m1", Image: "busybox"}},
		{Name: "launch full", Task: &Launch{Name: "m1", Image: "ubuntu:22.04", Profiles: []string{"default", "k8s"}, Devices: dev, WaitFor: []string{"true"}, WaitTimeout: "3m"}},
		{Name: "launch image_server", Task: &Launch{Name: "m1", Image: "debian/12", ImageServer: map[string]string{"url": "https://images.example.org", "protocol": "lxd"}}},
		{Name: "launch no name", Task: &Launch{Image: "busybox"}, Attr: "name", Msg: "must not be empty"},
		{Name: "launch name with dot", Task: &Launch{Name: "m.1", Image: "busybox"}, Attr: "name", Msg: "only letters, digits and hyphens"},
		{Name: "launch name starts with digit", Task: &Launch{Name: "1m", Image: "busybox"}, Attr: "name", Msg: "must not start with a digit"},
		{Name: "launch no image", Task: &Launch{Name: "m1"}, Attr: "image", Msg: "must not be empty"},
		{Name: "launch unknown remote", Task: &Launch{Name: "m1", Image: "nosuch:22.04"}, Attr: "image", Msg: `unknown remote "nosuch"`},
		{Name: "launch remote without alias", Task: &Launch{Name: "m1", Image: "ubuntu:"}, Attr: "image", Msg: "names no image"},
		{Name: "launch remote and image_server", Task: &Launch{Name: "m1", Image: "ubuntu:22.04", ImageServer: map[string]string{"url": "https://x"}}, Attr: "image", Msg: "image_server is set"},
		{Name: "launch image_server http", Task: &Launch{Name: "m1", Image: "x", ImageServer: map[string]string{"url": "http://x"}}, Attr: "image_server", Msg: "must start with https://"},
		{Name: "launch image_server protocol", Task: &Launch{Name: "m1", Image: "x", ImageServer: map[string]string{"url": "https://x", "protocol": "oci"}}, Attr: "image_server", Msg: "simplestreams or lxd"},
		{Name: "launch image_server key", Task: &Launch{Name: "m1", Image: "x", ImageServer: map[string]string{"url": "https://x", "proto": "lxd"}}, Attr: "image_server", Msg: `unknown key "proto"`},
		{Name: "launch empty profile", Task: &Launch{Name: "m1", Image: "x", Profiles: []string{""}}, Attr: "profiles", Msg: "must not be empty"},
		{Name: "launch profile with slash", Task: &Launch{Name: "m1", Image: "x", Profiles: []string{"default", "a/b"}}, Attr: "profiles", Msg: `"a/b" must not contain "/"`},
		{Name: "launch empty wait_for", Task: &Launch{Name: "m1", Image: "x", WaitFor: []string{}}, Attr: "wait_for", Msg: "must name a program"},
		{Name: "launch bad wait_timeout", Task: &Launch{Name: "m1", Image: "x", WaitTimeout: "soon"}, Attr: "wait_timeout", Msg: "not a duration"},
		{Name: "launch negative wait_timeout", Task: &Launch{Name: "m1", Image: "x", WaitTimeout: "-1s"}, Attr: "wait_timeout", Msg: "must be a positive duration"},
		{Name: "launch target member", Task: &Launch{Name: "m1", Image: "x", Target: "c2"}},
		{Name: "launch target group", Task: &Launch{Name: "m1", Image: "x", Target: "@edge"}},
		{Name: "launch target group none", Task: &Launch{Name: "m1", Image: "x", Target: "@none"}},
		{Name: "launch target bare @", Task: &Launch{Name: "m1", Image: "x", Target: "@"}, Attr: "target", Msg: `"@" names no cluster group`},
		{Name: "launch target none", Task: &Launch{Name: "m1", Image: "x", Target: "none"}, Attr: "target", Msg: "a server that is not a cluster"},
		{Name: "launch target slash", Task: &Launch{Name: "m1", Image: "x", Target: "c/2"}, Attr: "target", Msg: `must not contain "/"`},
		{Name: "launch target two @", Task: &Launch{Name: "m1", Image: "x", Target: "@@g"}, Attr: "target", Msg: `but as its first character`},
		{Name: "launch target space", Task: &Launch{Name: "m1", Image: "x", Target: "c 2"}, Attr: "target", Msg: "white space"},
		{Name: "launch target_group", Task: &Launch{Name: "m1", Image: "x", TargetGroup: "edge"}},
		{Name: "launch target and target_group", Task: &Launch{Name: "m1", Image: "x", Target: "c2", TargetGroup: "edge"}, Attr: "target_group", Msg: "not both"},
		{Name: "launch target_group with @", Task: &Launch{Name: "m1", Image: "x", TargetGroup: "@edge"}, Attr: "target_group", Msg: `without target's "@"`},
		{Name: "launch target_group slash", Task: &Launch{Name: "m1", Image: "x", TargetGroup: "e/g"}, Attr: "target_group", Msg: `must not contain "/"`},

		{Name: "delete", Task: &Delete{Instances: []string{"a", "b"}, Profiles: []string{"p"}, Images: []string{"i"}, Force: &no}},
		{Name: "delete nothing", Task: &Delete{}, Attr: "instances", Msg: "nothing to delete"},
		{Name: "delete empty name", Task: &Delete{Profiles: []string{""}}, Attr: "profiles", Msg: "must not be empty"},
		{Name: "delete bad instance name", Task: &Delete{Instances: []string{"member_1"}}, Attr: "instances", Msg: `"member_1" may contain only letters, digits and hyphens`},
		{Name: "delete bad profile name", Task: &Delete{Instances: []string{"m1"}, Profiles: []string{"a/b"}}, Attr: "profiles", Msg: `"a/b" must not contain "/"`},
		{Name: "delete twice", Task: &Delete{Images: []string{"i", "i"}}, Attr: "images", Msg: `"i" is listed twice`},

		{Name: "import unified", Task: &ImageImport{File: "x.tar.gz", Alias: "x"}},
		{Name: "import split", Task: &ImageImport{Metadata: "m.tar.xz", Rootfs: "r.squashfs", Alias: "x"}},
		{Name: "import nothing", Task: &ImageImport{Alias: "x"}, Attr: "file", Msg: "one of file or metadata + rootfs is required"},
		{Name: "import both", Task: &ImageImport{File: "x", Metadata: "m", Rootfs: "r", Alias: "x"}, Attr: "file", Msg: "mutually exclusive"},
		{Name: "import metadata only", Task: &ImageImport{Metadata: "m", Alias: "x"}, Attr: "rootfs", Msg: "metadata needs rootfs"},
		{Name: "import rootfs only", Task: &ImageImport{Rootfs: "r", Alias: "x"}, Attr: "metadata", Msg: "rootfs needs metadata"},
		{Name: "import no alias", Task: &ImageImport{File: "x"}, Attr: "alias", Msg: "must not be empty"},
	})
}

// exampleVars holds what the lxd examples refer to: the remote they share
// through locals.
var exampleVars = map[string]cty.Value{
	"local": cty.ObjectVal(map[string]cty.Value{"lxd": cty.MapValEmpty(cty.String)}),
}

// Each type registers with docs, outputs and an example that is one task
// block using only its own attributes and the engine's. lxd_launch's example
// refers to another task and to each.key, so these are not decoded.
func TestRegisterTypesA(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for name, outputs := range map[string]map[string]cty.Type{
		"lxd_profile":      {"name": cty.String},
		"lxd_launch":       {"name": cty.String, "status": cty.String, "ipv4": cty.List(cty.String), "ipv6": cty.List(cty.String), "location": cty.String},
		"lxd_delete":       {"deleted": cty.List(cty.String)},
		"lxd_image_import": {"fingerprint": cty.String, "alias": cty.String, "size": cty.Number},
	} {
		t.Run(name, func(t *testing.T) {
			typ, ok := r.Lookup(name)
			if !ok {
				t.Fatalf("%s not registered", name)
			}
			taskstest.CheckType(t, *typ, outputs)
			attrs, err := tasks.Attributes(typ.New())
			if err != nil {
				t.Fatal(err)
			}
			known := map[string]bool{}
			for _, a := range attrs {
				known[a.Name] = true
				if a.Name == "remote" && (a.Doc != RemoteDoc || !a.Type.Equals(cty.Map(cty.String))) {
					t.Errorf("remote: doc %q type %s, want RemoteDoc and map(string)", a.Doc, a.Type.FriendlyName())
				}
			}
			if !known["remote"] {
				t.Error("no remote attribute")
			}
			for attr := range taskstest.ExampleBlock(t, *typ).Body.Attributes {
				if !known[attr] && !tasks.IsMetaAttribute(attr) {
					t.Errorf("example sets unknown attribute %q", attr)
				}
			}
		})
	}
}
