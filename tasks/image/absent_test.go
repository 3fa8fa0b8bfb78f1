package image

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Only a HEAD on the write side that keeps answering 500 is taken as absent: the
// source's answers, other methods and a registry that is not there stay errors.
func TestAbsentOnServerError(t *testing.T) {
	const blob = "http://127.0.0.1:5000/v2/lab/app/blobs/sha256:00"
	const manifest = "http://127.0.0.1:5000/v2/lab/app/manifests/v1"
	tests := []struct {
		name    string
		method  string
		url     string
		write   bool
		status  int
		want    int
		logLine bool
	}{
		{"blob HEAD on the target, 500", http.MethodHead, blob, true, 500, 404, true},
		{"manifest HEAD on the target, 500", http.MethodHead, manifest, true, 500, 404, true},
		{"blob HEAD on the source, 500", http.MethodHead, blob, false, 500, 500, false},
		{"blob HEAD on the target, 503", http.MethodHead, blob, true, 503, 503, false},
		{"blob HEAD on the target, 502", http.MethodHead, blob, true, 502, 502, false},
		{"manifest GET on the target, 500", http.MethodGet, manifest, true, 500, 500, false},
		{"tag list HEAD on the target, 500", http.MethodHead, "http://127.0.0.1:5000/v2/lab/app/tags/list", true, 500, 500, false},
		{"blob HEAD on the target, 200", http.MethodHead, blob, true, 200, 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.write {
				ctx = forWrite(ctx)
			}
			req := httptest.NewRequest(tt.method, tt.url, nil).WithContext(ctx)
			rec := httptest.NewRecorder()
			rec.WriteHeader(tt.status)
			var log strings.Builder
			got := absentOnServerError(req, rec.Result(), &log)
			if got.StatusCode != tt.want {
				t.Errorf("status %d, want %d", got.StatusCode, tt.want)
			}
			if said := strings.Contains(log.String(), "taken as absent"); said != tt.logLine {
				t.Errorf("log %q; want a line saying so: %v", log.String(), tt.logLine)
			}
			if _, err := io.ReadAll(got.Body); err != nil {
				t.Errorf("body: %v", err)
			}
		})
	}
}
