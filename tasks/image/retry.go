package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/progress"
)

// retryPolicy says how often and how long to wait before repeating a registry
// request that failed transiently. go-containerregistry's own retry transport
// (v0.22.1) ignores Retry-After and sleeps without watching the context, so this
// one replaces it.
type retryPolicy struct {
	attempts int           // tries in all, the first included
	base     time.Duration // wait before the second try; doubled for each further one
	maxWait  time.Duration // cap on any single wait, including a Retry-After
}

// defaultRetry waits 0.25, 0.5, 1, 2 and 4 s, or longer when the registry's
// Retry-After asks for it: about 8 s of backoff before giving up on a registry.
var defaultRetry = retryPolicy{attempts: 6, base: 250 * time.Millisecond, maxWait: time.Minute}

// retryStatus are the answers worth repeating: the registry is busy or broken
// for a moment, not refusing this request for good.
var retryStatus = map[int]bool{
	http.StatusRequestTimeout:      true,
	http.StatusTooManyRequests:     true,
	http.StatusInternalServerError: true,
	http.StatusBadGateway:          true,
	http.StatusServiceUnavailable:  true,
	http.StatusGatewayTimeout:      true,
}

// retryTransport repeats requests that got a retryStatus answer or a transient
// network error, if their body can be replayed. Blob uploads stream their body
// once; go-containerregistry restarts those whole uploads itself.
type retryTransport struct {
	inner  http.RoundTripper
	policy retryPolicy
	log    io.Writer // one line per retry; nil: none
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 1; ; attempt++ {
		resp, err := t.inner.RoundTrip(req)
		if !replayable || attempt >= t.policy.attempts || !transient(req.Context(), resp, err) || !safeToRepeat(req, err) {
			return absentOnServerError(req, resp, t.log), err
		}
		wait := t.policy.backoff(attempt)
		fault := tasks.TransientFault(err)
		if resp != nil {
			fault = "HTTP " + resp.Status
			wait = max(wait, retryAfter(resp.Header.Get("Retry-After"), time.Now()))
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		wait = min(wait, t.policy.maxWait)
		if t.log != nil {
			fmt.Fprintf(t.log, "transient fault: %s on %s %s; retry %d in %s\n", fault, req.Method, req.URL.Host, attempt, progress.RoundElapsed(wait))
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// safeToRepeat reports whether req may be sent again after err. A step of a blob
// upload (PATCH, PUT to an upload session) whose answer was lost may have reached
// the registry, and repeating it would append the data again (DIGEST_INVALID, found
// by TestFaultRegistryRestart); only a refused connection proves nothing arrived.
// The mirror starts such an upload over instead (see mirrorRun.one).
func safeToRepeat(req *http.Request, err error) bool {
	if !strings.Contains(req.URL.Path, "/blobs/uploads/") || req.Method == http.MethodGet || req.Method == http.MethodHead {
		return true
	}
	return err != nil && errors.Is(err, syscall.ECONNREFUSED)
}

// backoff is the wait after the given failed attempt (counting from 1).
func (p retryPolicy) backoff(attempt int) time.Duration {
	return p.base << min(attempt-1, 16)
}

// transient reports whether a request that got resp or err may succeed when
// repeated: a retryStatus answer, or a fault tasks.TransientFault names. A refused
// connection is one: a registry that restarts refuses for a moment.
func transient(ctx context.Context, resp *http.Response, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if err == nil {
		return retryStatus[resp.StatusCode]
	}
	return tasks.TransientFault(err) != ""
}

// maxRetryAfter bounds what retryAfter returns, far above any policy's maxWait,
// so that a huge number of seconds cannot overflow into a negative wait.
const maxRetryAfter = 24 * time.Hour

// retryAfter parses a Retry-After header (seconds or an HTTP date) into a wait;
// zero if absent or unparseable, at most maxRetryAfter.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil || errors.Is(err, strconv.ErrRange) { // out of range: clamped
		return time.Duration(min(max(secs, 0), int(maxRetryAfter/time.Second))) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return min(max(at.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// rewind returns req ready to be sent again: a shallow copy with a fresh body.
func rewind(req *http.Request) (*http.Request, error) {
	if req.GetBody == nil {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again := req.Clone(req.Context())
	again.Body = body
	return again, nil
}
