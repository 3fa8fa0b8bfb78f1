package wait

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
	"github.com/flowdev/flow/tasks/internal/progress"
)

// httpKind is ready when a GET of url answers with an expected status and, if
// body_match is set, a matching body.
var httpKind = kind{
	attrs:    []string{"url", "expect_status", "body_match", "insecure", "ca_file", "headers"},
	required: []string{"url"},
	validate: validateHTTP,
	what:     func(w *WaitReady) string { u, _ := url.Parse(w.URL); return u.Redacted() },
	newProbe: newHTTPProbe,
}

// validateHTTP checks the URL, the statuses, the regular expression and the headers.
func validateHTTP(w *WaitReady) error {
	u, err := url.Parse(w.URL)
	switch {
	case err != nil:
		return &tasks.AttrError{Attr: "url", Err: errors.Unwrap(err)} // url.Error's text repeats the URL
	case u.Scheme != "http" && u.Scheme != "https":
		return &tasks.AttrError{Attr: "url", Err: fmt.Errorf("scheme must be http or https, not %q", u.Scheme)}
	case u.Host == "":
		return &tasks.AttrError{Attr: "url", Err: errors.New("host must not be empty")}
	}
	if w.ExpectStatus != nil && len(w.ExpectStatus) == 0 {
		return &tasks.AttrError{Attr: "expect_status", Err: errors.New("must list at least one status code")}
	}
	for _, s := range w.ExpectStatus {
		if s < 100 || s > 599 {
			return &tasks.AttrError{Attr: "expect_status", Err: fmt.Errorf("%d is not an HTTP status code (100 to 599)", s)}
		}
	}
	if _, err := regexp.Compile(w.BodyMatch); err != nil {
		return &tasks.AttrError{Attr: "body_match", Err: err}
	}
	if w.insecure() && w.CAFile != "" {
		return &tasks.AttrError{Attr: "ca_file", Err: errors.New("has no effect with insecure = true; set only one")}
	}
	for name, value := range w.Headers {
		if !validHeaderName(name) {
			return &tasks.AttrError{Attr: "headers", Err: fmt.Errorf("%q is not a valid header name", name)}
		}
		if strings.ContainsAny(value, "\r\n\x00") {
			return &tasks.AttrError{Attr: "headers", Err: fmt.Errorf("value of %q must not contain CR, LF or NUL", name)}
		}
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		isAlnum := c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !isAlnum && !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// httpProbe GETs one URL per check, on a new connection each time so every check
// sees the server as a new client would.
type httpProbe struct {
	client    *http.Client
	url       string
	headers   map[string]string
	expect    []int
	bodyMatch *regexp.Regexp // nil: any body

	// set by the check that found the endpoint ready
	status int
	body   string
}

func newHTTPProbe(w *WaitReady) (probe, error) {
	tlsConfig := &tls.Config{InsecureSkipVerify: w.insecure()} //nolint:gosec // the user asked for it
	if w.CAFile != "" {
		pool, err := loadCAs(w.CAFile)
		if err != nil {
			return nil, err
		}
		tlsConfig.RootCAs = pool
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	transport.DisableKeepAlives = true
	p := &httpProbe{
		client:  &http.Client{Transport: transport},
		url:     w.URL,
		headers: w.Headers,
		expect:  w.ExpectStatus,
	}
	if p.expect == nil {
		p.expect = []int{http.StatusOK}
	}
	if w.BodyMatch != "" {
		p.bodyMatch = regexp.MustCompile(w.BodyMatch) // Validate compiled it
	}
	return p, nil
}

// loadCAs reads a PEM file into a pool that replaces the system's CAs.
func loadCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read ca_file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca_file %s: no PEM certificates found", path)
	}
	return pool, nil
}

func (p *httpProbe) check(ctx context.Context) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return false, "", fmt.Errorf("build request: %w", err)
	}
	for name, value := range p.headers {
		if strings.EqualFold(name, "Host") { // net/http ignores a Host header field
			req.Host = value
		} else {
			req.Header.Set(name, value)
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false, errorState(err), nil
	}
	defer resp.Body.Close()
	capture := output.NewCapture(nil)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, output.CaptureLimit+1))
	_, _ = capture.Write(raw)
	raw = raw[:min(len(raw), output.CaptureLimit)]
	state := fmt.Sprintf("status %d", resp.StatusCode)
	switch {
	case !slices.Contains(p.expect, resp.StatusCode):
		return false, state, nil
	case err != nil:
		return false, state + ", error reading body: " + progress.ErrorCause(err), nil
	case p.bodyMatch != nil && !p.bodyMatch.Match(raw):
		return false, fmt.Sprintf("%s, body %s does not match %q", state, snippet(capture.String()), p.bodyMatch), nil
	}
	p.status, p.body = resp.StatusCode, capture.String()
	return true, state, nil
}

func (p *httpProbe) outputs() tasks.Outputs {
	return tasks.Outputs{
		"status": cty.NumberIntVal(int64(p.status)),
		"body":   cty.StringVal(p.body),
	}
}

// snippet quotes the start of a body for a state line.
func snippet(body string) string {
	const limit = 60
	if r := []rune(body); len(r) > limit {
		return fmt.Sprintf("%q...", string(r[:limit]))
	}
	return fmt.Sprintf("%q", body)
}

var (
	_ probe     = (*httpProbe)(nil)
	_ outputter = (*httpProbe)(nil)
)
