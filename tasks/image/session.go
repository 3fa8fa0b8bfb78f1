package image

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// baseTransport is shared by every run so that connections to a registry are
// reused across tasks. Parallel mirrors keep many connections to one host busy.
var baseTransport = func() http.RoundTripper {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	t.IdleConnTimeout = 30 * time.Second
	return t
}()

// session is one registry as seen by one run: an authenticated transport with
// a puller and a pusher on it.
type session struct {
	puller *remote.Puller
	pusher *remote.Pusher
}

// sessions hands out one session per registry for the length of one Run, so a
// run pings each registry and fetches each token once instead of once per
// repository. Tokens are asked for every repository the run will touch up
// front; go-containerregistry widens them when a registry asks for more.
type sessions struct {
	ctx    context.Context // the Run's; ends every request of the run
	scopes map[string][]string
	policy retryPolicy
	log    io.Writer // where each retry is reported: the task's stderr

	mu    sync.Mutex
	byReg map[string]*lazySession
}

type lazySession struct {
	once sync.Once
	s    *session
	err  error
}

// newSessions prepares sessions for ctx; nothing is contacted until get. Each
// retry of a request is reported on log (nil: nowhere).
func newSessions(ctx context.Context, log io.Writer) *sessions {
	if log == nil {
		log = io.Discard
	}
	return &sessions{ctx: ctx, scopes: map[string][]string{}, policy: defaultRetry, log: log, byReg: map[string]*lazySession{}}
}

// pull and push note that the run will read from or write to repo.
func (s *sessions) pull(repo name.Repository) { s.addScope(repo, transport.PullScope) }
func (s *sessions) push(repo name.Repository) { s.addScope(repo, transport.PushScope) }

func (s *sessions) addScope(repo name.Repository, action string) {
	reg := repo.RegistryStr()
	scope := repo.Scope(action)
	for _, have := range s.scopes[reg] {
		if have == scope {
			return
		}
	}
	s.scopes[reg] = append(s.scopes[reg], scope)
}

// get returns the session for reg, connecting on first use. A failure is kept:
// every image on an unreachable registry reports the same error without trying
// again.
func (s *sessions) get(reg name.Registry) (*session, error) {
	s.mu.Lock()
	ls, ok := s.byReg[reg.RegistryStr()]
	if !ok {
		ls = &lazySession{}
		s.byReg[reg.RegistryStr()] = ls
	}
	s.mu.Unlock()
	ls.once.Do(func() { ls.s, ls.err = s.connect(reg) })
	return ls.s, ls.err
}

func (s *sessions) connect(reg name.Registry) (*session, error) {
	auth, err := authn.DefaultKeychain.Resolve(reg)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	scopes := append([]string(nil), s.scopes[reg.RegistryStr()]...)
	sort.Strings(scopes)
	retrying := &retryTransport{inner: baseTransport, policy: s.policy, log: s.log}
	rt, err := transport.NewWithContext(s.ctx, reg, auth, retrying, scopes)
	if err != nil {
		return nil, err
	}
	// rt is a *transport.Wrapper: remote uses it as it is, without pinging
	// again or adding its own retries.
	opts := []remote.Option{remote.WithTransport(rt), remote.WithContext(s.ctx)}
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return nil, err
	}
	pusher, err := remote.NewPusher(opts...)
	if err != nil {
		return nil, err
	}
	return &session{puller: puller, pusher: pusher}, nil
}
