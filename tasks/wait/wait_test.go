package wait

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/flowdev/flow/tasks"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

func boolPtr(b bool) *bool { return &b }

// run runs w and returns its outputs, what it printed and its error.
func run(ctx context.Context, t *testing.T, w *WaitReady) (tasks.Outputs, string, error) {
	t.Helper()
	var stdout bytes.Buffer // written only by Run's own goroutine, read after it returns
	env := &tasks.Env{Address: "wait_ready.test", Attempt: 1, Stdout: &stdout, Stderr: io.Discard,
		Logger: hclog.NewNullLogger()}
	out, err := w.Run(ctx, env)
	return out, stdout.String(), err
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
	tcp := func(addr string) WaitReady { return WaitReady{Kind: "tcp", Address: addr} }
	web := func(url string) WaitReady { return WaitReady{Kind: "http", URL: url} }
	with := func(w WaitReady, f func(*WaitReady)) WaitReady { f(&w); return w }
	tests := []struct {
		name     string
		wait     WaitReady
		wantAttr string // "" means valid
		wantMsg  string
	}{
		{"tcp", tcp("127.0.0.1:6443"), "", ""},
		{"tcp ipv6 and durations", with(tcp("[::1]:80"), func(w *WaitReady) {
			w.Interval, w.WaitTimeout, w.RequestTimeout = "250ms", "1h", "2s"
		}), "", ""},
		{"http", web("http://127.0.0.1:8080/healthz"), "", ""},
		{"http with everything", with(web("HTTPS://user:pw@host.example:8443/readyz?verbose"), func(w *WaitReady) {
			w.ExpectStatus, w.BodyMatch, w.Insecure, w.CAFile = []int{200, 204}, `^ok$`, boolPtr(false), "ca.pem"
			w.Headers = map[string]string{"Authorization": "Bearer x", "Host": "api.example"}
		}), "", ""},
		{"insecure", with(web("https://h/"), func(w *WaitReady) { w.Insecure = boolPtr(true) }), "", ""},

		{"no kind", WaitReady{}, "kind", `unknown kind ""; want one of "http", "tcp"`},
		{"kubernetes kind not yet", WaitReady{Kind: "kube_api"}, "kind", `unknown kind "kube_api"`},
		{"tcp without address", WaitReady{Kind: "tcp"}, "address", `required for kind "tcp"`},
		{"http without url", WaitReady{Kind: "http"}, "url", `required for kind "http"`},
		{"url with tcp", with(tcp("h:1"), func(w *WaitReady) { w.URL = "http://h/" }), "url", `not used by kind "tcp"`},
		{"address with http", with(web("http://h/"), func(w *WaitReady) { w.Address = "h:1" }), "address", `not used by kind "http"`},
		{"insecure=false with tcp", with(tcp("h:1"), func(w *WaitReady) { w.Insecure = boolPtr(false) }), "insecure", `not used by kind "tcp"`},
		{"empty headers with tcp", with(tcp("h:1"), func(w *WaitReady) { w.Headers = map[string]string{} }), "headers", `not used by kind "tcp"`},
		{"expect_status with tcp", with(tcp("h:1"), func(w *WaitReady) { w.ExpectStatus = []int{200} }), "expect_status", `not used`},
		{"other kind's attribute before missing one", WaitReady{Kind: "tcp", BodyMatch: "x"}, "body_match", `not used`},

		{"address without port", tcp("localhost"), "address", "want host:port: missing port in address"},
		{"address with empty host", tcp(":80"), "address", "host must not be empty"},
		{"port 0", tcp("h:0"), "address", `port "0" must be a number from 1 to 65535`},
		{"port too big", tcp("h:65536"), "address", "from 1 to 65535"},
		{"named port", tcp("h:https"), "address", `port "https"`},

		{"url scheme", web("ftp://h/"), "url", `scheme must be http or https, not "ftp"`},
		{"url without scheme", web("localhost:8080/healthz"), "url", `scheme must be http or https, not "localhost"`},
		{"url without host", web("http:///healthz"), "url", "host must not be empty"},
		{"url unparsable", web("http://[::1/"), "url", "missing ']' in host"},
		{"expect_status empty", with(web("http://h/"), func(w *WaitReady) { w.ExpectStatus = []int{} }), "expect_status", "at least one"},
		{"expect_status out of range", with(web("http://h/"), func(w *WaitReady) { w.ExpectStatus = []int{200, 600} }), "expect_status", "600 is not an HTTP status code"},
		{"body_match bad", with(web("http://h/"), func(w *WaitReady) { w.BodyMatch = "(ok" }), "body_match", "missing closing )"},
		{"insecure and ca_file", with(web("https://h/"), func(w *WaitReady) { w.Insecure, w.CAFile = boolPtr(true), "ca.pem" }), "ca_file", "no effect with insecure = true"},
		{"header name", with(web("http://h/"), func(w *WaitReady) { w.Headers = map[string]string{"X Token": "1"} }), "headers", `"X Token" is not a valid header name`},
		{"header value", with(web("http://h/"), func(w *WaitReady) { w.Headers = map[string]string{"X-A": "1\r\nX-B: 2"} }), "headers", `value of "X-A" must not contain CR, LF or NUL`},

		{"interval unitless", with(tcp("h:1"), func(w *WaitReady) { w.Interval = "1" }), "interval", "positive duration"},
		{"wait_timeout negative", with(tcp("h:1"), func(w *WaitReady) { w.WaitTimeout = "-1s" }), "wait_timeout", "positive duration"},
		{"request_timeout zero", with(web("http://h/"), func(w *WaitReady) { w.RequestTimeout = "0s" }), "request_timeout", "positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.wait.Validate()
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
	if typ.Summary == "" || typ.Doc == "" || typ.Example == "" {
		t.Errorf("Summary, Doc and Example must be set: %+v", typ)
	}
	wantOutputs := map[string]cty.Type{"elapsed": cty.Number, "status": cty.Number, "body": cty.String}
	if len(typ.Outputs) != len(wantOutputs) {
		t.Errorf("got %d outputs, want %d", len(typ.Outputs), len(wantOutputs))
	}
	for _, o := range typ.Outputs {
		if want, ok := wantOutputs[o.Name]; !ok || !o.Type.Equals(want) || o.Doc == "" {
			t.Errorf("output %q: type %s, doc %q; want type %v and a doc", o.Name, o.Type.FriendlyName(), o.Doc, want)
		}
	}
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

// The example must be a task block that decodes into a valid WaitReady.
func TestExampleDecodes(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	typ, _ := r.Lookup("wait_ready")
	f, diags := hclsyntax.ParseConfig([]byte(typ.Example), "example.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse example: %v", diags)
	}
	blocks := f.Body.(*hclsyntax.Body).Blocks
	if len(blocks) != 1 || blocks[0].Type != "task" || len(blocks[0].Labels) != 2 || blocks[0].Labels[0] != "wait_ready" {
		t.Fatalf("example is not one `task \"wait_ready\" \"NAME\"` block:\n%s", typ.Example)
	}
	var w WaitReady
	if diags := gohcl.DecodeBody(blocks[0].Body, nil, &w); diags.HasErrors() {
		t.Fatalf("decode example: %v", diags)
	}
	if err := w.Validate(); err != nil {
		t.Errorf("example does not validate: %v", err)
	}
}
