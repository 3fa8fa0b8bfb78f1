package wait

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/flowdev/flow/tasks/kube"
)

// kubeAPIKind is ready when the API server's /readyz answers 200 "ok" through the
// kubeconfig's connection (its TLS settings and credentials).
var kubeAPIKind = kind{
	attrs:    withKubeConn(),
	validate: func(*WaitReady) error { return nil },
	what:     func(w *WaitReady) string { return "Kubernetes API" + kubeWhere(w) },
	newProbe: newKubeAPIProbe,
}

// kubeAPIProbe asks /readyz over the connection's own HTTP client (TLS settings,
// credentials) but reads the answer itself: client-go's REST client turns a
// plain-text error answer into an error without its status code.
type kubeAPIProbe struct {
	client *http.Client
	url    string
}

func newKubeAPIProbe(w *WaitReady) (probe, error) {
	cfg, err := kubeConfig(w)
	if err != nil {
		return nil, err
	}
	c, err := kube.RawClient(cfg)
	if err != nil {
		return nil, err
	}
	return &kubeAPIProbe{client: c.Client, url: c.Get().AbsPath("/readyz").URL().String()}, nil
}

func (p *kubeAPIProbe) check(ctx context.Context) (bool, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return false, "", err
	}
	res, err := p.client.Do(req)
	if err != nil {
		return false, errorState(err), nil
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<16))
	if err != nil {
		return false, errorState(err), nil
	}
	code := res.StatusCode
	state := fmt.Sprintf("status %d", code)
	switch {
	case code != http.StatusOK:
		return false, state, nil
	case strings.TrimSpace(string(body)) != "ok":
		return false, fmt.Sprintf("%s, body %s", state, snippet(strings.TrimSpace(string(body)))), nil
	}
	return true, state, nil
}

var _ probe = (*kubeAPIProbe)(nil)
