package process

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/flowdev/flow/tasks/internal/progress"
)

// Tests shorten these.
var (
	// checkEvery is the pause between readiness checks.
	checkEvery = 500 * time.Millisecond
	// progressEvery is how often a wait reports that it is still waiting.
	progressEvery = 10 * time.Second
	// requestTimeout bounds one readiness check.
	requestTimeout = 5 * time.Second
)

// readyCheck checks readiness once and describes what it saw, e.g. "status 503".
type readyCheck func(ctx context.Context) (ready bool, state string)

// waitReady waits until the ready check passes, the process exits, ready_timeout
// passes or ctx is cancelled. Without a ready check the process counts as ready.
func (p *Process) waitReady(ctx context.Context, out io.Writer, r *running, logFile string) error {
	what, check := p.readyCheck()
	if check == nil {
		return nil
	}
	limit, _ := p.readyTimeout()
	start := time.Now()
	fmt.Fprintf(out, "waiting for %s (up to %s)\n", what, limit)
	waitCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	next := time.NewTimer(0)
	defer next.Stop()
	last := "no check finished"
	for {
		if how, gone := r.gone(); gone {
			return fmt.Errorf("%s %s before it was ready%s", r.rec.label(), how, logTail(logFile, r.logFrom))
		}
		select {
		case <-waitCtx.Done(): // also when ctx ends: which of the two must not be left to chance
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("wait for %s: %w", what, err)
			}
			return fmt.Errorf("%s not ready after %s (last: %s); it keeps running%s",
				r.rec.label(), limit, last, logTail(logFile, r.logFrom))
		case <-ticker.C:
			fmt.Fprintf(out, "still waiting for %s (%s, last: %s)\n", what, progress.RoundElapsed(time.Since(start)), last)
		case <-r.exited: // nil for a process found running: never ready
		case <-next.C:
			checkCtx, cancelCheck := context.WithTimeout(waitCtx, requestTimeout)
			ready, state := check(checkCtx)
			cancelCheck()
			if ready {
				// Something else may answer (an older copy holding the port that this
				// one then fails to bind), so the process must still run.
				if how, gone := r.gone(); gone {
					return fmt.Errorf("%s %s before it was ready%s", r.rec.label(), how, logTail(logFile, r.logFrom))
				}
				fmt.Fprintf(out, "%s ready after %s\n", r.rec.label(), progress.RoundElapsed(time.Since(start)))
				return nil
			}
			// A check cut short by the wait's end says less than the one before it; a
			// dial's own deadline can expire a moment before waitCtx reports it.
			if deadline, _ := waitCtx.Deadline(); waitCtx.Err() == nil && time.Now().Before(deadline) {
				last = state
			}
			next.Reset(checkEvery)
		}
	}
}

// readyCheck returns what the ready check waits for and the check, or a nil check.
func (p *Process) readyCheck() (string, readyCheck) {
	switch {
	case p.ReadyURL != "":
		u, _ := url.Parse(p.ReadyURL)
		return u.Redacted(), p.httpCheck()
	case p.ReadyTCP != "":
		return "tcp://" + p.ReadyTCP, tcpCheck(p.ReadyTCP)
	}
	return "", nil
}

// httpCheck GETs ready_url on a new connection each time, without a proxy and without
// following redirects: any 2xx or 3xx answer means ready.
func (p *Process) httpCheck() readyCheck {
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: p.Insecure}, //nolint:gosec // the user asked for it
		DisableKeepAlives: true,
	}
	client := &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.ReadyURL, nil)
		if err != nil {
			return false, "error: " + err.Error()
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, "error: " + progress.ErrorCause(err)
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400, fmt.Sprintf("status %d", resp.StatusCode)
	}
}

func tcpCheck(addr string) readyCheck {
	return func(ctx context.Context) (bool, string) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, "error: " + progress.ErrorCause(err)
		}
		_ = conn.Close()
		return true, "connected"
	}
}
