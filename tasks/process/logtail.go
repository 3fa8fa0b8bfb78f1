package process

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

const (
	// tailLines is how many lines of the log a failure shows.
	tailLines = 20
	// tailBytes bounds how much of the log end is read for them.
	tailBytes = 16 << 10
)

// logTail returns "; last lines of FILE:" and the last lines the process wrote to
// path from offset on, indented, for an error message; or why there are none.
func logTail(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("; read log_file: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("; read log_file: %v", err)
	}
	from := max(offset, fi.Size()-tailBytes)
	b, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return fmt.Sprintf("; read log_file: %v", err)
	}
	if from > offset { // started mid-line
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	text := strings.TrimRight(strings.ToValidUTF8(string(b), "\uFFFD"), "\n")
	if strings.TrimSpace(text) == "" {
		return fmt.Sprintf("; it logged nothing to %s", path)
	}
	lines := strings.Split(text, "\n")
	lines = lines[max(0, len(lines)-tailLines):]
	return fmt.Sprintf("; last lines of %s:\n  %s", path, strings.Join(lines, "\n  "))
}
