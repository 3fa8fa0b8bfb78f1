package host

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Dirs are the plugin directories a plugin named without a slash is looked up in, in
// order: each directory of $FLOW_PLUGIN_PATH (colon-separated), then
// ~/.local/share/flow/plugins.
func Dirs() []string {
	var dirs []string
	for _, d := range filepath.SplitList(os.Getenv("FLOW_PLUGIN_PATH")) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".local", "share", "flow", "plugins"))
	}
	return dirs
}

// Find resolves a plugin block's source: a path with a slash is relative to the
// flow's directory dir; a bare name is the first executable of that name in Dirs.
// It returns an absolute path.
func Find(source, dir string) (string, error) {
	if source == "" {
		return "", fmt.Errorf("source is empty")
	}
	if strings.ContainsRune(source, '/') {
		path := source
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		return abs, executable(abs)
	}
	dirs := Dirs()
	for _, d := range dirs {
		path := filepath.Join(d, source)
		if executable(path) == nil {
			return filepath.Abs(path)
		}
	}
	return "", fmt.Errorf("no executable %q in the plugin directories %s (set FLOW_PLUGIN_PATH, or give a path with a slash, relative to the flow)",
		source, strings.Join(dirs, ", "))
}

func executable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// Sum is the hex sha256 of the file at path.
func Sum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
