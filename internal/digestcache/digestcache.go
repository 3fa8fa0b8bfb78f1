// Package digestcache remembers the sha256 of large files between runs, so a task that
// needs the digest of an unchanged file (an image's fingerprint, a layer's digest) does
// not read hundreds of megabytes again at every run.
//
// An entry is keyed by what the kernel says of each file: its path, device and inode,
// size, modification and change times in nanoseconds. Rewriting a file changes its
// change time, which no user call can set back, so a changed file is always read again.
// It owns its cache directory ($FLOW_DIGEST_CACHE, else ~/.cache/flow/digests); it does
// not own the files it hashes. The cache is an optimisation: when it cannot be read or
// written, Sum reads the files as if it were empty. Safe for concurrent use, across
// processes too (entries are written by rename).
package digestcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/flowdev/flow/internal/ctxio"
)

// format changes whenever the key or the digest does, so no entry of an older flow is trusted.
const format = "flow digestcache v1"

// Dir is where entries live.
func Dir() string {
	if d := os.Getenv("FLOW_DIGEST_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "flow", "digests")
	}
	return ""
}

// Sum returns the hex sha256 of the concatenated contents of paths, from the cache when
// no file changed since it was last computed on this machine. Cancelling ctx stops a read.
func Sum(ctx context.Context, paths ...string) (string, error) {
	key, err := keyOf(paths)
	if err != nil {
		return "", err
	}
	entry := ""
	if dir := Dir(); dir != "" && key != "" {
		entry = filepath.Join(dir, key)
		if b, err := os.ReadFile(entry); err == nil && len(b) == sha256.Size*2 {
			return string(b), nil
		}
	}
	sum, err := read(ctx, paths)
	if err != nil || entry == "" {
		return sum, err
	}
	store(entry, sum)
	return sum, nil
}

// keyOf is the entry name for paths as they are now, or "" when a file cannot be
// looked at (then Sum reads, and fails as reading does).
func keyOf(paths []string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, format)
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		info, err := os.Stat(abs)
		if err != nil {
			return "", nil // reading it says what is wrong, as a read without the cache would
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return "", nil
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d\x00%d.%d\x00%d.%d\n", abs, st.Dev, st.Ino, st.Size,
			st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func read(ctx context.Context, paths []string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, ctxio.Reader(ctx, f))
		f.Close()
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// store writes an entry by rename, so a reader never sees half of one; failures are ignored.
func store(entry, sum string) {
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(entry), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(sum)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), entry) != nil {
		os.Remove(tmp.Name())
	}
}
