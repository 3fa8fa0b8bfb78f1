package main

import (
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/plugin/host"
	pluginserver "github.com/flowdev/flow/plugin/server"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

func TestValidate(t *testing.T) {
	u := "http://127.0.0.1:1/x"
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "url only", Task: &HTTP{URL: u}},
		{Name: "all set", Task: &HTTP{URL: u, Method: "POST", ExpectStatus: []int{201}, RetryOn: []string{"5xx", "404"}, JSONPath: "a.b", ExpectJSON: "x", Wait: "1m"}},
		{Name: "not http", Task: &HTTP{URL: "ftp://x"}, Attr: "url", Msg: "not an http"},
		{Name: "lower-case method", Task: &HTTP{URL: u, Method: "get"}, Attr: "method", Msg: "upper case"},
		{Name: "bad status", Task: &HTTP{URL: u, ExpectStatus: []int{99}}, Attr: "expect_status", Msg: "no HTTP status"},
		{Name: "bad class", Task: &HTTP{URL: u, RetryOn: []string{"5x"}}, Attr: "retry_on", Msg: "neither a class"},
		{Name: "expect_json alone", Task: &HTTP{URL: u, ExpectJSON: "x"}, Attr: "expect_json", Msg: "needs json_path"},
		{Name: "bad wait", Task: &HTTP{URL: u, Wait: "soon"}, Attr: "wait", Msg: "not a duration"},
	})
}

func TestType(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatal(err)
	}
	if err := r.Check(); err != nil {
		t.Fatal(err)
	}
	typ, _ := r.Lookup("http")
	taskstest.CheckType(t, *typ, map[string]cty.Type{"status": cty.Number, "body": cty.String, "json_value": cty.String, "tries": cty.Number})
	taskstest.CheckExample(t, *typ, nil)
}

// server answers each request with the next of answers (the last repeats).
func server(t *testing.T, answers ...func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			i = len(answers) - 1
		}
		answers[i](w, r)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func status(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code); _, _ = w.Write([]byte(body)) }
}

func TestRun(t *testing.T) {
	echoHeader := func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"method":"` + r.Method + `","token":"` + r.Header.Get("X-Token") + `"}`))
	}
	tests := []struct {
		name    string
		answers []func(http.ResponseWriter, *http.Request)
		task    HTTP
		wantErr string
		tries   int
		status  int
		value   string
	}{
		{name: "ok", answers: []func(http.ResponseWriter, *http.Request){status(200, "fine")}, tries: 1, status: 200},
		{name: "method, headers, json path", answers: []func(http.ResponseWriter, *http.Request){echoHeader},
			task: HTTP{Method: "PUT", Headers: map[string]string{"X-Token": "t1"}, JSONPath: "token"}, tries: 1, status: 200, value: "t1"},
		{name: "5xx retried", answers: []func(http.ResponseWriter, *http.Request){status(503, "busy"), status(200, `{"items":[{"n":1}]}`)},
			task: HTTP{Wait: "5s", Interval: "10ms", JSONPath: "items.0"}, tries: 2, status: 200, value: `{"n":1}`},
		{name: "404 not retried by default", answers: []func(http.ResponseWriter, *http.Request){status(404, "no")},
			task: HTTP{Wait: "5s", Interval: "10ms"}, wantErr: `status 404, body "no" (1 tries)`, tries: 1, status: 404},
		{name: "404 retried when named", answers: []func(http.ResponseWriter, *http.Request){status(404, "no"), status(204, "")},
			task: HTTP{Wait: "5s", Interval: "10ms", RetryOn: []string{"4xx"}}, tries: 2, status: 204},
		{name: "wait for a json value", answers: []func(http.ResponseWriter, *http.Request){status(200, `{"s":"starting"}`), status(200, `{"s":"ok"}`)},
			task: HTTP{Wait: "5s", Interval: "10ms", JSONPath: "s", ExpectJSON: "ok"}, tries: 2, status: 200, value: "ok"},
		{name: "expected status", answers: []func(http.ResponseWriter, *http.Request){status(201, "")},
			task: HTTP{ExpectStatus: []int{201}}, tries: 1, status: 201},
		{name: "gives up after wait", answers: []func(http.ResponseWriter, *http.Request){status(500, "down")},
			task: HTTP{Wait: "100ms", Interval: "30ms"}, wantErr: `status 500, body "down"`, status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := server(t, tt.answers...)
			task := tt.task
			task.URL = s.URL
			if err := task.Validate(); err != nil {
				t.Fatal(err)
			}
			env, _ := taskstest.NewEnv(t)
			out, err := task.Run(t.Context(), env)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
			}
			if got, _ := out["status"].AsBigFloat().Int64(); int(got) != tt.status {
				t.Errorf("status = %d, want %d", got, tt.status)
			}
			if tt.tries > 0 {
				if got, _ := out["tries"].AsBigFloat().Int64(); int(got) != tt.tries {
					t.Errorf("tries = %d, want %d", got, tt.tries)
				}
			}
			if got := out["json_value"].AsString(); got != tt.value {
				t.Errorf("json_value = %q, want %q", got, tt.value)
			}
		})
	}
}

// TestServedByPlugin builds this plugin and runs a call through flow's host side:
// the type arrives with its schema, and Run's output and outputs cross the boundary.
func TestServedByPlugin(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flow-plugin-http")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	proc := host.NewProcess("http", bin, nil)
	t.Cleanup(proc.Kill)
	types, err := proc.Types(t.Context())
	if err != nil || len(types) != 1 || types[0].Name != "http" {
		t.Fatalf("types %v, %v", types, err)
	}
	s, _ := server(t, status(200, `{"v":[1,2]}`))
	task := types[0].New()
	values, _ := pluginserver.Values(&HTTP{URL: s.URL, JSONPath: "v"})
	if err := tasks.Decode(task, values); err != nil {
		t.Fatal(err)
	}
	if err := task.Validate(); err != nil {
		t.Fatal(err)
	}
	env, printed := taskstest.NewEnv(t)
	out, err := task.Run(t.Context(), env)
	if err != nil || out["json_value"].AsString() != "[1,2]" || !strings.Contains(printed.String(), "GET "+s.URL+": 200") {
		t.Fatalf("Run = %v, %v; printed %q", out, err, printed.String())
	}
	values, _ = pluginserver.Values(&HTTP{URL: "ftp://x"})
	bad := types[0].New()
	_ = tasks.Decode(bad, values)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `url: "ftp://x" is not`) {
		t.Errorf("Validate = %v", err)
	}
}
