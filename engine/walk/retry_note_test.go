package walk

import (
	"testing"
	"time"
)

func TestRetryNote(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"exit status 3", "; retrying in 88ms"},
		{"plugin \"m\" exited during run: EOF; its last stderr lines:\n  exiting with 3", "\nm.a: retrying in 88ms"},
	} {
		if got := retryNote("m.a", c.msg, 88*time.Millisecond); got != c.want {
			t.Errorf("retryNote(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}
