package walk

import (
	"strings"
	"time"
)

// retryNote is what follows a failed attempt's message when it will run again:
// "; retrying in 88ms" after a one-line message, and on a line of its own, naming the
// instance, after one of several lines (a plugin's last stderr lines), so that it is
// not read as the last line the plugin wrote.
func retryNote(addr, msg string, delay time.Duration) string {
	if strings.Contains(msg, "\n") {
		return "\n" + addr + ": retrying in " + delay.String()
	}
	return "; retrying in " + delay.String()
}
