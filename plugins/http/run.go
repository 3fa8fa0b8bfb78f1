package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
)

const bodyLimit = 64 << 10

// response is what one try got.
type response struct {
	status int
	body   string
	value  string
}

// Run sends the request until the response is as expected or wait has passed.
func (h *HTTP) Run(ctx context.Context, env *tasks.Env) (tasks.Outputs, error) {
	deadline := time.Now().Add(h.Wait.Or(0))
	client := &http.Client{Timeout: h.RequestTime.Or(30 * time.Second)}
	start := time.Now()
	for try := 1; ; try++ {
		res, retry, err := h.try(ctx, client)
		if err == nil {
			fmt.Fprintf(env.Stdout, "%s %s: %d after %s (%d tries)\n", h.method(), h.URL, res.status, time.Since(start).Round(time.Millisecond), try)
			return h.outputs(res, try), nil
		}
		if !retry || !time.Now().Add(h.interval()).Before(deadline) {
			var out tasks.Outputs
			if res != nil {
				out = h.outputs(res, try)
			}
			return out, fmt.Errorf("%s %s: %w (%d tries)", h.method(), h.URL, err, try)
		}
		fmt.Fprintf(env.Stdout, "%s %s: %v; trying again in %s\n", h.method(), h.URL, err, h.interval())
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s %s: %w", h.method(), h.URL, ctx.Err())
		case <-time.After(h.interval()):
		}
	}
}

func (h *HTTP) outputs(res *response, tries int) tasks.Outputs {
	return tasks.Outputs{"status": cty.NumberIntVal(int64(res.status)), "body": cty.StringVal(res.body),
		"json_value": cty.StringVal(res.value), "tries": cty.NumberIntVal(int64(tries))}
}

// try sends one request; retry says whether a failure may be tried again.
func (h *HTTP) try(ctx context.Context, client *http.Client) (*response, bool, error) {
	var body io.Reader
	if h.Body != "" {
		body = strings.NewReader(h.Body)
	}
	req, err := http.NewRequestWithContext(ctx, h.method(), h.URL, body)
	if err != nil {
		return nil, false, err
	}
	for k, v := range h.Headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, ctx.Err() == nil, fmt.Errorf("request: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, bodyLimit))
	if err != nil {
		return nil, true, fmt.Errorf("read response: %w", err)
	}
	res := &response{status: resp.StatusCode, body: string(b)}
	if !h.expected(res.status) {
		return res, h.retried(res.status), fmt.Errorf("status %d, body %q", res.status, head(res.body))
	}
	if h.JSONPath == "" {
		return res, false, nil
	}
	if res.value, err = jsonPath(b, h.JSONPath); err != nil {
		return res, h.ExpectJSON != "", err
	}
	if h.ExpectJSON != "" && res.value != h.ExpectJSON {
		return res, true, fmt.Errorf("%s is %q, want %q", h.JSONPath, res.value, h.ExpectJSON)
	}
	return res, false, nil
}

func head(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// jsonPath reads the value at a dotted path (object keys, list indexes) of a JSON
// document, as text: a string as it is, anything else as JSON.
func jsonPath(doc []byte, path string) (string, error) {
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return "", fmt.Errorf("response is not JSON: %w", err)
	}
	for _, step := range strings.Split(path, ".") {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[step]
			if !ok {
				return "", fmt.Errorf("json_path %s: no key %q", path, step)
			}
			v = next
		case []any:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(node) {
				return "", fmt.Errorf("json_path %s: %q is no index of a list of %d", path, step, len(node))
			}
			v = node[i]
		default:
			return "", fmt.Errorf("json_path %s: %q is below a %T", path, step, v)
		}
	}
	if s, ok := v.(string); ok {
		return s, nil
	}
	b, _ := json.Marshal(v)
	return string(b), nil
}
