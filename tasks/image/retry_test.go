package image

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{"-1", 0},
		{now.Add(2 * time.Second).Format(http.TimeFormat), 2 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"soon", 0},
		{"10000000000", 24 * time.Hour},             // seconds that overflow a Duration
		{"99999999999999999999999", 24 * time.Hour}, // seconds that overflow an int
		{now.AddDate(500, 0, 0).Format(http.TimeFormat), 24 * time.Hour},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.header, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

// A server that answers 503 twice, then 200, seen through retryTransport.
func TestRetryTransport(t *testing.T) {
	var calls atomic.Int32
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	rt := &retryTransport{inner: http.DefaultTransport, policy: retryPolicy{attempts: 4, base: time.Millisecond, maxWait: time.Second}}
	client := &http.Client{Transport: rt}

	tests := []struct {
		name      string
		body      io.Reader
		wantCalls int32
		wantCode  int
	}{
		{"no body", nil, 3, http.StatusOK},
		{"replayable body", bytes.NewReader([]byte("manifest")), 3, http.StatusOK},
		{"streamed body is not repeated", io.MultiReader(strings.NewReader("blob")), 1, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			bodies = nil
			req, err := http.NewRequest(http.MethodPut, srv.URL, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if calls.Load() != tt.wantCalls || resp.StatusCode != tt.wantCode {
				t.Errorf("%d calls ending in %d, want %d ending in %d", calls.Load(), resp.StatusCode, tt.wantCalls, tt.wantCode)
			}
			for _, b := range bodies {
				if tt.body != nil && b == "" {
					t.Errorf("a repeated request arrived without its body: %q", bodies)
				}
			}
		})
	}
}

// Cancelling during a Retry-After wait ends the request at once.
func TestRetryTransportCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	start := time.Now()
	_, err := (&retryTransport{inner: http.DefaultTransport, policy: defaultRetry}).RoundTrip(req)
	if err != context.DeadlineExceeded || time.Since(start) > time.Second {
		t.Errorf("RoundTrip = %v after %v, want context.DeadlineExceeded at once", err, time.Since(start))
	}
}
