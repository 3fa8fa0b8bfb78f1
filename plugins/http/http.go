package main

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

// HTTP is the config struct of the http task type.
type HTTP struct {
	URL          string            `hcl:"url" doc:"The endpoint, http:// or https://."`
	Method       string            `hcl:"method,optional" doc:"Request method; GET unless set."`
	Headers      map[string]string `hcl:"headers,optional" doc:"Request headers. Their values are never printed."`
	Body         string            `hcl:"body,optional" doc:"Request body."`
	ExpectStatus []int             `hcl:"expect_status,optional" doc:"Status codes that count as success; any 2xx unless set."`
	JSONPath     string            `hcl:"json_path,optional" doc:"A dotted path into the JSON response (items.0.name); its value is the json_value output."`
	ExpectJSON   string            `hcl:"expect_json,optional" doc:"With json_path: the value (as text) the path must have; the call is retried until it has, within wait."`
	RetryOn      []string          `hcl:"retry_on,optional" doc:"Status classes and codes that are retried within wait: \"5xx\", \"4xx\", \"429\". Connection errors are always retried. [\"5xx\", \"429\"] unless set."`
	Wait         tasks.Duration    `hcl:"wait,optional" doc:"How long to keep retrying, e.g. \"2m\"; 0 (the default) tries once."`
	Interval     tasks.Duration    `hcl:"interval,optional" doc:"Pause between tries; 1s unless set."`
	RequestTime  tasks.Duration    `hcl:"request_timeout,optional" doc:"Bound on one request; 30s unless set."`
}

// Register adds the http task type to r.
func Register(r *tasks.Registry) error { return r.Add(httpType) }

func httpType() tasks.Type {
	return tasks.Type{
		Name:    "http",
		Summary: "Call an HTTP endpoint, or wait until it answers as expected",
		Doc: `Sends one request (method, headers, body) to url and checks the response status
against expect_status (any 2xx by default). With json_path, the response is read as JSON
and the value at that dotted path becomes the json_value output; with expect_json too,
the value must equal it.

A status in retry_on (classes such as "5xx" or codes such as "429"), a connection error,
or a json_path value other than expect_json is tried again every interval until wait
has passed; any other unexpected status fails the task at once, naming the status and
the start of the body. A call changes nothing flow can undo.`,
		New: func() tasks.Task { return &HTTP{} },
		Outputs: []tasks.Output{
			{Name: "status", Type: cty.Number, Doc: "Status code of the last response.", Clean: true},
			{Name: "body", Type: cty.String, Doc: "Body of the last response, first 64 KiB."},
			{Name: "json_value", Type: cty.String, Doc: "The value at json_path as text (JSON for objects and lists); empty without json_path."},
			{Name: "tries", Type: cty.Number, Doc: "How many requests were sent.", Clean: true},
		},
		Undo: tasks.UndoNothing,
		Example: `task "http" "api_ready" {
  url           = "http://127.0.0.1:8080/healthz"
  headers       = { Accept = "application/json" }
  json_path     = "status"
  expect_json   = "ok"
  retry_on      = ["5xx", "404"]
  wait          = "2m"
}`,
	}
}

var classRE = regexp.MustCompile(`^([1-5]xx|[1-5][0-9][0-9])$`)

// Validate checks the URL, the method, the status codes, retry_on and the durations.
func (h *HTTP) Validate() error {
	u, err := url.Parse(h.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &tasks.AttrError{Attr: "url", Err: fmt.Errorf("%q is not an http:// or https:// URL", h.URL)}
	}
	if h.Method != "" && strings.ToUpper(h.Method) != h.Method {
		return &tasks.AttrError{Attr: "method", Err: fmt.Errorf("%q must be upper case, e.g. GET", h.Method)}
	}
	for _, c := range h.ExpectStatus {
		if c < 100 || c > 599 {
			return &tasks.AttrError{Attr: "expect_status", Err: fmt.Errorf("%d is no HTTP status", c)}
		}
	}
	for _, c := range h.RetryOn {
		if !classRE.MatchString(c) {
			return &tasks.AttrError{Attr: "retry_on", Err: fmt.Errorf("%q is neither a class such as \"5xx\" nor a code such as \"429\"", c)}
		}
	}
	if h.ExpectJSON != "" && h.JSONPath == "" {
		return &tasks.AttrError{Attr: "expect_json", Err: errors.New("needs json_path")}
	}
	for name, d := range map[string]tasks.Duration{"wait": h.Wait, "interval": h.Interval, "request_timeout": h.RequestTime} {
		if _, err := d.Parse(); err != nil {
			return &tasks.AttrError{Attr: name, Err: err}
		}
	}
	return nil
}

func (h *HTTP) method() string {
	if h.Method == "" {
		return "GET"
	}
	return h.Method
}

// retried reports whether status is in retry_on.
func (h *HTTP) retried(status int) bool {
	classes := h.RetryOn
	if classes == nil {
		classes = []string{"5xx", "429"}
	}
	code := fmt.Sprint(status)
	for _, c := range classes {
		if c == code || (strings.HasSuffix(c, "xx") && c[0] == code[0]) {
			return true
		}
	}
	return false
}

// expected reports whether status counts as success.
func (h *HTTP) expected(status int) bool {
	if len(h.ExpectStatus) == 0 {
		return status >= 200 && status < 300
	}
	for _, c := range h.ExpectStatus {
		if c == status {
			return true
		}
	}
	return false
}

var _ tasks.Task = (*HTTP)(nil)

// interval is the pause between tries.
func (h *HTTP) interval() time.Duration { return h.Interval.Or(time.Second) }
