package wait

import (
	"github.com/flowdev/flow/tasks"

	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

func setProgressEvery(t *testing.T, d time.Duration) {
	old := progressEvery
	progressEvery = d
	t.Cleanup(func() { progressEvery = old })
}

// hang answers only when the client gives up or the test ends.
func hang(t *testing.T) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the server's Close
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

func TestProgress(t *testing.T) {
	setProgressEvery(t, 40*time.Millisecond)
	srv := serve(t, notReadyFor(10, reply(200, "ok")))
	url := srv.URL + "/"
	_, stdout, err := run(context.Background(), t, &WaitReady{Kind: "http", URL: url, Interval: "30ms", WaitTimeout: "5s"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if want := "waiting for " + url + " (up to 5s, checking every 30ms)"; lines[0] != want {
		t.Errorf("first line = %q, want %q", lines[0], want)
	}
	still := regexp.MustCompile(`^still waiting for ` + regexp.QuoteMeta(url) + ` \([\d.]+m?s, last: (status 503|no check finished)\)$`)
	var stills int
	for _, l := range lines[1 : len(lines)-1] {
		if !still.MatchString(l) {
			t.Errorf("progress line %q does not match %s", l, still)
		}
		stills++
	}
	if stills < 2 || !strings.Contains(stdout, "last: status 503)") {
		t.Errorf("want at least 2 progress lines naming status 503, got:\n%s", stdout)
	}
	if ready := regexp.MustCompile(`^` + regexp.QuoteMeta(url) + ` ready after [\d.]+m?s$`); !ready.MatchString(lines[len(lines)-1]) {
		t.Errorf("last line = %q, want it to match %s", lines[len(lines)-1], ready)
	}
}

// A check that gets no answer is cut off by request_timeout, and a slow check does not
// hold the wait beyond wait_timeout.
func TestNoAnswer(t *testing.T) {
	tests := []struct {
		name           string
		requestTimeout tasks.Duration
		waitTimeout    tasks.Duration
		minUnanswered  time.Duration // the last check went unanswered at least this long
	}{
		{"request_timeout", "100ms", "350ms", 95 * time.Millisecond},
		{"wait_timeout during a check", "10s", "200ms", 190 * time.Millisecond},
	}
	lastState := regexp.MustCompile(`: not ready after (\S+): last no answer within (\S+)$`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := serve(t, hang(t))
			start := time.Now()
			_, _, err := run(context.Background(), t, &WaitReady{Kind: "http", URL: srv.URL + "/", Interval: "20ms",
				RequestTimeout: tt.requestTimeout, WaitTimeout: tt.waitTimeout})
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Run took %v, want about %s", took, tt.waitTimeout)
			}
			m := lastState.FindStringSubmatch(fmt.Sprint(err))
			if m == nil || m[1] != string(tt.waitTimeout) {
				t.Fatalf("Run error = %v, want it to match %s with %s", err, lastState, tt.waitTimeout)
			}
			if d, perr := time.ParseDuration(m[2]); perr != nil || d < tt.minUnanswered || d > time.Second {
				t.Errorf("Run error = %v, want no answer within %v to 1s", err, tt.minUnanswered)
			}
		})
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name     string
		wait     func(t *testing.T) *WaitReady
		deadline bool // the engine's timeout instead of an interrupt
	}{
		{"between checks", func(t *testing.T) *WaitReady {
			return &WaitReady{Kind: "tcp", Address: freeAddr(t), Interval: "1m"}
		}, false},
		{"during a check", func(t *testing.T) *WaitReady {
			return &WaitReady{Kind: "http", URL: serve(t, hang(t)).URL + "/", RequestTimeout: "1m"}
		}, false},
		{"engine deadline during a check", func(t *testing.T) *WaitReady {
			return &WaitReady{Kind: "http", URL: serve(t, hang(t)).URL + "/", RequestTimeout: "1m"}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.wait(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			want := context.Canceled
			if tt.deadline {
				ctx, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
				defer cancel()
				want = context.DeadlineExceeded
			} else {
				time.AfterFunc(150*time.Millisecond, cancel)
			}
			start := time.Now()
			out, _, err := run(ctx, t, w)
			if took := time.Since(start); took > time.Second {
				t.Errorf("Run returned %v after start, want about 150ms", took)
			}
			if !errors.Is(err, want) {
				t.Errorf("Run error = %v, want it to wrap %v", err, want)
			}
			if wantMsg := "wait for " + kinds[w.Kind].what(w) + ": " + want.Error(); err == nil || err.Error() != wantMsg {
				t.Errorf("Run error = %v, want %q", err, wantMsg)
			}
			if out != nil {
				t.Errorf("outputs = %v, want nil", out)
			}
		})
	}
}

func TestAlreadyCancelled(t *testing.T) {
	addr := listen(t, "127.0.0.1:0").Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := run(ctx, t, &WaitReady{Kind: "tcp", Address: addr})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error = %v, want context.Canceled even though the port is open", err)
	}
}
