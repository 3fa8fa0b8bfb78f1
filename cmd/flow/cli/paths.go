package cli

import (
	"os"
	"path/filepath"
)

// displayPath is p relative to the caller's directory when it lies below it. The
// engine never changes the process's directory, so that is the working directory.
func displayPath(p string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, p); err == nil && !filepath.IsAbs(rel) && len(rel) < len(p) && rel[0] != '.' {
			return rel
		}
	}
	return p
}
