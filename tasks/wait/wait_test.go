package wait

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/kube"
	"github.com/flowdev/flow/tasks/taskstest"
)

func boolPtr(b bool) *bool { return &b }

func intPtr(i int) *int { return &i }

// run runs w and returns its outputs, what it printed and its error.
func run(ctx context.Context, t *testing.T, w *WaitReady) (tasks.Outputs, string, error) {
	t.Helper()
	env, printed := taskstest.NewEnv(t)
	out, err := w.Run(ctx, env)
	return out, printed.String(), err
}

func outNumber(t *testing.T, out tasks.Outputs, name string) float64 {
	t.Helper()
	v, ok := out[name]
	if !ok || !v.Type().Equals(cty.Number) {
		t.Fatalf("output %q = %#v, want a number", name, v)
	}
	f, _ := v.AsBigFloat().Float64()
	return f
}

func outString(t *testing.T, out tasks.Outputs, name string) string {
	t.Helper()
	v, ok := out[name]
	if !ok || !v.Type().Equals(cty.String) {
		t.Fatalf("output %q = %#v, want a string", name, v)
	}
	return v.AsString()
}

func TestValidate(t *testing.T) {
	tcp := func(addr string) *WaitReady { return &WaitReady{Kind: "tcp", Address: addr} }
	web := func(url string) *WaitReady { return &WaitReady{Kind: "http", URL: url} }
	with := func(w *WaitReady, f func(*WaitReady)) *WaitReady { f(w); return w }
	kube := func(kind string) *WaitReady { return &WaitReady{Kind: kind} }
	cond := func(f func(*WaitReady)) *WaitReady {
		w := &WaitReady{Kind: "condition", APIVersion: "work.karmada.io/v1alpha2", ObjectKind: "ResourceBinding",
			Name: "web-deployment", Condition: "Scheduled"}
		if f != nil {
			f(w)
		}
		return w
	}
	placed := func(present, absent []string) *WaitReady {
		return &WaitReady{Kind: "karmada_placement", Name: "nginx-deployment", PlacementPresent: present, PlacementAbsent: absent}
	}
	list := func(names ...string) []string { return names }
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "tcp", Task: tcp("127.0.0.1:6443")},
		{Name: "tcp ipv6 and durations", Task: with(tcp("[::1]:80"), func(w *WaitReady) {
			w.Interval, w.WaitTimeout, w.RequestTimeout = "250ms", "1h", "2s"
		})},
		{Name: "http", Task: web("http://127.0.0.1:8080/healthz")},
		{Name: "http with everything", Task: with(web("HTTPS://user:pw@host.example:8443/readyz?verbose"), func(w *WaitReady) {
			w.ExpectStatus, w.BodyMatch, w.Insecure, w.CAFile = []int{200, 204}, `^ok$`, boolPtr(false), "ca.pem"
			w.Headers = map[string]string{"Authorization": "Bearer x", "Host": "api.example"}
		})},
		{Name: "insecure", Task: with(web("https://h/"), func(w *WaitReady) { w.Insecure = boolPtr(true) })},

		{Name: "no kind", Task: &WaitReady{}, Attr: "kind",
			Msg: `unknown kind ""; want one of "condition", "deployment", "http", "karmada_clusters", "karmada_placement", "kube_api", "nodes", "pods", "tcp"`},
		{Name: "tcp without address", Task: &WaitReady{Kind: "tcp"}, Attr: "address", Msg: `required for kind "tcp"`},
		{Name: "http without url", Task: &WaitReady{Kind: "http"}, Attr: "url", Msg: `required for kind "http"`},
		{Name: "url with tcp", Task: with(tcp("h:1"), func(w *WaitReady) { w.URL = "http://h/" }), Attr: "url", Msg: `not used by kind "tcp"`},
		{Name: "address with http", Task: with(web("http://h/"), func(w *WaitReady) { w.Address = "h:1" }), Attr: "address", Msg: `not used by kind "http"`},
		{Name: "insecure=false with tcp", Task: with(tcp("h:1"), func(w *WaitReady) { w.Insecure = boolPtr(false) }), Attr: "insecure", Msg: `not used by kind "tcp"`},
		{Name: "empty headers with tcp", Task: with(tcp("h:1"), func(w *WaitReady) { w.Headers = map[string]string{} }), Attr: "headers", Msg: `not used by kind "tcp"`},
		{Name: "expect_status with tcp", Task: with(tcp("h:1"), func(w *WaitReady) { w.ExpectStatus = []int{200} }), Attr: "expect_status", Msg: `not used`},
		{Name: "other kind's attribute before missing one", Task: &WaitReady{Kind: "tcp", BodyMatch: "x"}, Attr: "body_match", Msg: `not used`},

		{Name: "address without port", Task: tcp("localhost"), Attr: "address", Msg: "want host:port: missing port in address"},
		{Name: "address with empty host", Task: tcp(":80"), Attr: "address", Msg: "host must not be empty"},
		{Name: "port 0", Task: tcp("h:0"), Attr: "address", Msg: `port "0" must be a number from 1 to 65535`},
		{Name: "port too big", Task: tcp("h:65536"), Attr: "address", Msg: "from 1 to 65535"},
		{Name: "named port", Task: tcp("h:https"), Attr: "address", Msg: `port "https"`},

		{Name: "url scheme", Task: web("ftp://h/"), Attr: "url", Msg: `scheme must be http or https, not "ftp"`},
		{Name: "url without scheme", Task: web("localhost:8080/healthz"), Attr: "url", Msg: `scheme must be http or https, not "localhost"`},
		{Name: "url without host", Task: web("http:///healthz"), Attr: "url", Msg: "host must not be empty"},
		{Name: "url unparsable", Task: web("http://[::1/"), Attr: "url", Msg: "missing ']' in host"},
		{Name: "expect_status empty", Task: with(web("http://h/"), func(w *WaitReady) { w.ExpectStatus = []int{} }), Attr: "expect_status", Msg: "at least one"},
		{Name: "expect_status out of range", Task: with(web("http://h/"), func(w *WaitReady) { w.ExpectStatus = []int{200, 600} }), Attr: "expect_status", Msg: "600 is not an HTTP status code"},
		{Name: "body_match bad", Task: with(web("http://h/"), func(w *WaitReady) { w.BodyMatch = "(ok" }), Attr: "body_match", Msg: "missing closing )"},
		{Name: "insecure and ca_file", Task: with(web("https://h/"), func(w *WaitReady) { w.Insecure, w.CAFile = boolPtr(true), "ca.pem" }), Attr: "ca_file", Msg: "no effect with insecure = true"},
		{Name: "header name", Task: with(web("http://h/"), func(w *WaitReady) { w.Headers = map[string]string{"X Token": "1"} }), Attr: "headers", Msg: `"X Token" is not a valid header name`},
		{Name: "header value", Task: with(web("http://h/"), func(w *WaitReady) { w.Headers = map[string]string{"X-A": "1\r\nX-B: 2"} }), Attr: "headers", Msg: `value of "X-A" must not contain CR, LF or NUL`},

		{Name: "kubeconfig with tcp", Task: with(tcp("h:1"), func(w *WaitReady) { w.Kubeconfig = "k" }), Attr: "kubeconfig", Msg: `not used by kind "tcp"`},
		{Name: "selector with tcp", Task: with(tcp("h:1"), func(w *WaitReady) { w.Selector = "app=web" }), Attr: "selector", Msg: `not used by kind "tcp"`},
		{Name: "context with http", Task: with(web("http://h/"), func(w *WaitReady) { w.Context = "c" }), Attr: "context", Msg: `not used by kind "http"`},
		{Name: "min_count 0 with deployment", Task: with(kube("deployment"), func(w *WaitReady) { w.Name, w.MinCount = "web", intPtr(0) }), Attr: "min_count", Msg: `not used by kind "deployment"`},
		{Name: "name with pods", Task: with(kube("pods"), func(w *WaitReady) { w.Name = "web" }), Attr: "name", Msg: `not used by kind "pods"`},
		{Name: "empty clusters with nodes", Task: with(kube("nodes"), func(w *WaitReady) { w.Clusters = []string{} }), Attr: "clusters", Msg: `not used by kind "nodes"`},
		{Name: "condition_status with kube_api", Task: with(kube("kube_api"), func(w *WaitReady) { w.ConditionStatus = "True" }), Attr: "condition_status", Msg: `not used`},
		{Name: "address with nodes", Task: with(kube("nodes"), func(w *WaitReady) { w.Address = "h:1" }), Attr: "address", Msg: `not used by kind "nodes"`},

		{Name: "kube_api", Task: kube("kube_api")},
		{Name: "kube_api with connection", Task: with(kube("kube_api"), func(w *WaitReady) { w.Kubeconfig, w.Context = "lab.kubeconfig", "member1" })},
		{Name: "nodes", Task: kube("nodes")},
		{Name: "nodes min_count 0", Task: with(kube("nodes"), func(w *WaitReady) { w.MinCount = intPtr(0) })},
		{Name: "nodes min_count negative", Task: with(kube("nodes"), func(w *WaitReady) { w.MinCount = intPtr(-1) }), Attr: "min_count", Msg: "must not be negative, got -1"},

		{Name: "deployment", Task: with(kube("deployment"), func(w *WaitReady) { w.Name, w.Namespace = "karmada-controller-manager", "karmada-system" })},
		{Name: "deployment without name", Task: kube("deployment"), Attr: "name", Msg: `required for kind "deployment"`},
		{Name: "deployment name", Task: with(kube("deployment"), func(w *WaitReady) { w.Name = "Web" }), Attr: "name", Msg: `"Web" is not a valid name: a lowercase RFC 1123 subdomain`},
		{Name: "deployment namespace", Task: with(kube("deployment"), func(w *WaitReady) { w.Name, w.Namespace = "web", "a.b" }), Attr: "namespace", Msg: `"a.b" is not a namespace name`},

		{Name: "pods", Task: with(kube("pods"), func(w *WaitReady) { w.Selector, w.MinCount = "app in (web, api),tier!=cache", intPtr(2) })},
		{Name: "pods without selector", Task: kube("pods")},
		{Name: "pods selector", Task: with(kube("pods"), func(w *WaitReady) { w.Selector = "app in (web" }), Attr: "selector", Msg: "unable to parse requirement"},
		{Name: "pods min_count", Task: with(kube("pods"), func(w *WaitReady) { w.MinCount = intPtr(-2) }), Attr: "min_count", Msg: "must not be negative"},
		{Name: "pods namespace", Task: with(kube("pods"), func(w *WaitReady) { w.Namespace = "Monitoring" }), Attr: "namespace", Msg: "not a namespace name"},

		{Name: "karmada_clusters", Task: with(kube("karmada_clusters"), func(w *WaitReady) { w.Clusters = []string{"member1", "member2"} })},
		{Name: "karmada_clusters without clusters", Task: kube("karmada_clusters"), Attr: "clusters", Msg: `required for kind "karmada_clusters"`},
		{Name: "karmada_clusters empty", Task: with(kube("karmada_clusters"), func(w *WaitReady) { w.Clusters = []string{} }), Attr: "clusters", Msg: "must list at least one name"},
		{Name: "karmada_clusters bad name", Task: with(kube("karmada_clusters"), func(w *WaitReady) { w.Clusters = []string{"member1", "member_2"} }), Attr: "clusters", Msg: `"member_2" is not a valid name`},
		{Name: "karmada_clusters twice", Task: with(kube("karmada_clusters"), func(w *WaitReady) { w.Clusters = []string{"m1", "m2", "m1"} }), Attr: "clusters", Msg: `"m1" is listed twice`},

		{Name: "karmada_placement absent", Task: placed(nil, list("member1"))},
		{Name: "karmada_placement both", Task: with(placed(list("member2", "member3"), list("member1")), func(w *WaitReady) { w.Namespace = "karmada-demo" })},
		{Name: "karmada_placement empty present", Task: placed(list(), list("member1"))},
		{Name: "karmada_placement without name", Task: with(placed(list("m1"), nil), func(w *WaitReady) { w.Name = "" }), Attr: "name", Msg: `required for kind "karmada_placement"`},
		{Name: "karmada_placement neither", Task: placed(nil, nil), Attr: "placement_present", Msg: "placement_present or placement_absent must name a cluster"},
		{Name: "karmada_placement both empty", Task: placed(list(), list()), Attr: "placement_present", Msg: "placement_present or placement_absent must name a cluster"},
		{Name: "karmada_placement in both", Task: placed(list("member2", "member1"), list("member1")), Attr: "placement_absent", Msg: `"member1" is in placement_present too`},
		{Name: "karmada_placement bad name", Task: placed(list("member1"), list("Member_2")), Attr: "placement_absent", Msg: `"Member_2" is not a valid name: a lowercase RFC 1123 subdomain`},
		{Name: "karmada_placement twice", Task: placed(list("m1", "m1"), nil), Attr: "placement_present", Msg: `"m1" is listed twice`},
		{Name: "karmada_placement binding name", Task: with(placed(list("m1"), nil), func(w *WaitReady) { w.Name = "nginx/deployment" }), Attr: "name", Msg: `"nginx/deployment" is not a valid name`},
		{Name: "placement_absent with karmada_clusters", Task: with(kube("karmada_clusters"), func(w *WaitReady) { w.Clusters, w.PlacementAbsent = list("m1"), list("m1") }), Attr: "placement_absent", Msg: `not used by kind "karmada_clusters"`},

		{Name: "condition", Task: cond(nil)},
		{Name: "condition core kind with everything", Task: cond(func(w *WaitReady) {
			w.APIVersion, w.ObjectKind, w.Name, w.Namespace, w.Condition, w.ConditionStatus = "v1", "Pod", "system:web.1", "default", "example.com/Synced", "Unknown"
		})},
		{Name: "condition without api_version", Task: cond(func(w *WaitReady) { w.APIVersion = "" }), Attr: "api_version", Msg: `required for kind "condition"`},
		{Name: "condition without object_kind", Task: cond(func(w *WaitReady) { w.ObjectKind = "" }), Attr: "object_kind", Msg: "required"},
		{Name: "condition without name", Task: cond(func(w *WaitReady) { w.Name = "" }), Attr: "name", Msg: "required"},
		{Name: "condition without condition", Task: cond(func(w *WaitReady) { w.Condition = "" }), Attr: "condition", Msg: "required"},
		{Name: "api_version too many parts", Task: cond(func(w *WaitReady) { w.APIVersion = "a/b/c" }), Attr: "api_version", Msg: `want "VERSION" or "GROUP/VERSION"`},
		{Name: "api_version without version", Task: cond(func(w *WaitReady) { w.APIVersion = "apps/" }), Attr: "api_version", Msg: "version is missing"},
		{Name: "object_kind plural", Task: cond(func(w *WaitReady) { w.ObjectKind = "resource-bindings" }), Attr: "object_kind", Msg: `"resource-bindings" is not a kind`},
		{Name: "condition name with slash", Task: cond(func(w *WaitReady) { w.Name = "a/b" }), Attr: "name", Msg: `may not contain '/'`},
		{Name: "condition with space", Task: cond(func(w *WaitReady) { w.Condition = "Fully Ready" }), Attr: "condition", Msg: "must not contain spaces"},
		{Name: "condition_status lower case", Task: cond(func(w *WaitReady) { w.ConditionStatus = "true" }), Attr: "condition_status", Msg: `must be "True", "False" or "Unknown", not "true"`},

		{Name: "interval unitless", Task: with(tcp("h:1"), func(w *WaitReady) { w.Interval = "1" }), Attr: "interval", Msg: "is not a duration"},
		{Name: "wait_timeout negative", Task: with(tcp("h:1"), func(w *WaitReady) { w.WaitTimeout = "-1s" }), Attr: "wait_timeout", Msg: "positive duration"},
		{Name: "request_timeout zero", Task: with(web("http://h/"), func(w *WaitReady) { w.RequestTimeout = "0s" }), Attr: "request_timeout", Msg: "positive duration"},
	})
}

// Run validates too, so a task the engine did not validate fails instead of panicking.
func TestRunInvalid(t *testing.T) {
	_, _, err := run(context.Background(), t, &WaitReady{Kind: "udp"})
	if err == nil || !strings.Contains(err.Error(), `kind: unknown kind "udp"`) {
		t.Errorf("Run error = %v, want the Validate error", err)
	}
}

func TestRegister(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	typ, ok := r.Lookup("wait_ready")
	if !ok {
		t.Fatal(`type "wait_ready" not registered`)
	}
	taskstest.CheckType(t, *typ, map[string]cty.Type{
		"elapsed": cty.Number, "status": cty.Number, "body": cty.String,
		"nodes": cty.List(cty.String), "pods": cty.List(cty.Object(map[string]cty.Type{"name": cty.String, "ip": cty.String})),
		"pod_ips": cty.List(cty.String), "clusters": cty.List(cty.String), "placement": cty.Map(cty.Number),
	})
	taskstest.CheckExample(t, *typ, nil)
	if _, ok := typ.New().(*WaitReady); !ok {
		t.Errorf("New() returned %T, want *WaitReady", typ.New())
	}
}

func TestAttributes(t *testing.T) {
	attrs, err := tasks.Attributes(&WaitReady{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name     string
		typ      cty.Type
		required bool
	}{
		{"kind", cty.String, true},
		{"address", cty.String, false},
		{"url", cty.String, false},
		{"expect_status", cty.List(cty.Number), false},
		{"body_match", cty.String, false},
		{"insecure", cty.Bool, false},
		{"ca_file", cty.String, false},
		{"headers", cty.Map(cty.String), false},
		{"kubeconfig", cty.String, false},
		{"context", cty.String, false},
		{"name", cty.String, false},
		{"namespace", cty.String, false},
		{"selector", cty.String, false},
		{"min_count", cty.Number, false},
		{"clusters", cty.List(cty.String), false},
		{"placement_present", cty.List(cty.String), false},
		{"placement_absent", cty.List(cty.String), false},
		{"api_version", cty.String, false},
		{"object_kind", cty.String, false},
		{"condition", cty.String, false},
		{"condition_status", cty.String, false},
		{"interval", cty.String, false},
		{"wait_timeout", cty.String, false},
		{"request_timeout", cty.String, false},
	}
	if len(attrs) != len(want) {
		t.Fatalf("got %d attributes, want %d: %+v", len(attrs), len(want), attrs)
	}
	for i, w := range want {
		a := attrs[i]
		if a.Name != w.name || !a.Type.Equals(w.typ) || a.Required != w.required || a.Doc == "" {
			t.Errorf("attribute %d = %+v, want %s of type %s (required %v) with a doc", i, a, w.name, w.typ.FriendlyName(), w.required)
		}
	}
	// The connection attributes say what every Kubernetes task's say.
	for i, doc := range map[int]string{8: kube.KubeconfigDoc, 9: kube.ContextDoc} {
		if !strings.HasSuffix(strings.ToLower(attrs[i].Doc), strings.ToLower(doc)) {
			t.Errorf("%s doc = %q, want it to end with %q", attrs[i].Name, attrs[i].Doc, doc)
		}
	}
}

// Decoding an explicit insecure = false sets it, so Validate can tell it was written.
func TestDecodeInsecure(t *testing.T) {
	var w WaitReady
	err := tasks.Decode(&w, map[string]cty.Value{
		"kind": cty.StringVal("tcp"), "address": cty.StringVal("h:1"), "insecure": cty.False,
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.Insecure == nil || *w.Insecure {
		t.Fatalf("insecure = %v, want a pointer to false", w.Insecure)
	}
	var ae *tasks.AttrError
	if err := w.Validate(); !errors.As(err, &ae) || ae.Attr != "insecure" {
		t.Errorf("Validate() = %v, want an error on insecure", err)
	}
}
