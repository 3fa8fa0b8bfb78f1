package wait

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
)

// kubeAPIKind is ready when the API server's /readyz answers 200 "ok" through the
// kubeconfig's connection (its TLS settings and credentials).
var kubeAPIKind = kind{
	attrs:    withKubeConn(),
	validate: func(*WaitReady) error { return nil },
	what:     func(w *WaitReady) string { return "Kubernetes API" + kubeWhere(w) },
	newProbe: newKubeAPIProbe,
}

type kubeAPIProbe struct {
	client rest.Interface
}

func newKubeAPIProbe(w *WaitReady) (probe, error) {
	c, err := kubeClientset(w)
	if err != nil {
		return nil, err
	}
	return &kubeAPIProbe{client: c.Discovery().RESTClient()}, nil
}

func (p *kubeAPIProbe) check(ctx context.Context) (bool, string, error) {
	res := p.client.Get().AbsPath("/readyz").Do(ctx)
	var code int
	res.StatusCode(&code)
	body, err := res.Raw()
	state := fmt.Sprintf("status %d", code)
	switch {
	case code == 0: // no response
		return false, errorState(err), nil
	case code != http.StatusOK:
		return false, state, nil
	case strings.TrimSpace(string(body)) != "ok":
		return false, fmt.Sprintf("%s, body %s", state, snippet(strings.TrimSpace(string(body)))), nil
	}
	return true, state, nil
}

var _ probe = (*kubeAPIProbe)(nil)
