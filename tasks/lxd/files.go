package lxd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/internal/ctxio"
)

// File kinds as LXD's file API names them.
const (
	kindFile    = "file"
	kindDir     = "directory"
	kindSymlink = "symlink"
)

// treeDirMode is the mode of directories lxd_file_push creates.
const treeDirMode = 0o755

// fileEntry is one entry of a file transfer, by its slash-separated path
// relative to the transfer's root ("" for the root itself).
type fileEntry struct {
	rel    string
	kind   string
	target string // of a symlink, as the source has it
	size   int64  // of a file
	sum    string // hex sha256 of a file's content or a symlink's linkTarget
}

// treeDigest is the sha256 of a tree: of the lines "SUM  PATH\n" (as
// sha256sum prints them) of every file and symlink, sorted by path, where a
// symlink's SUM is that of its target. A push and a pull of the same tree
// give the same digest.
func treeDigest(entries []fileEntry) string {
	sorted := slices.Clone(entries)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].rel < sorted[j].rel })
	h := sha256.New()
	for _, e := range sorted {
		if e.kind != kindDir {
			io.WriteString(h, e.sum+"  "+e.rel+"\n")
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// countFiles counts the files and symlinks of a transfer.
func countFiles(entries []fileEntry) int {
	n := 0
	for _, e := range entries {
		if e.kind != kindDir {
			n++
		}
	}
	return n
}

func sumString(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// parseMode reads an octal mode such as "0644"; "" gives def. Only permission
// bits: LXD's file API drops setuid, setgid and sticky (and so does
// os.Chmod given a plain number), so such a mode would never match on a re-run.
func parseMode(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o7777 {
		return 0, fmt.Errorf("%q is not an octal file mode such as \"0644\"", s)
	}
	if m > 0o777 {
		return 0, fmt.Errorf("%q: setuid, setgid and sticky bits are not supported; give permission bits such as \"0755\"", s)
	}
	return int(m), nil
}

// validateInstancePath checks an absolute, clean path inside an instance.
func validateInstancePath(p string) error {
	switch {
	case p == "":
		return errors.New("must not be empty")
	case !strings.HasPrefix(p, "/"):
		return fmt.Errorf("%q must be an absolute path inside the instance", p)
	case path.Clean(p) == "/":
		return errors.New(`must not be "/"`)
	}
	return nil
}

// remoteFile is what LXD reports about a path inside an instance. A
// directory has no body; a file's or symlink's body must be closed.
type remoteFile struct {
	resp *lxdclient.InstanceFileResponse
	body io.ReadCloser
}

func (f *remoteFile) close() {
	if f != nil && f.body != nil {
		f.body.Close()
	}
}

// statRemote fetches path from instance; a missing path gives nil and no
// error. The body is closed when ctx ends, because the client sends this
// request without a context.
func statRemote(ctx context.Context, srv lxdclient.InstanceServer, instance, p string) (*remoteFile, error) {
	body, resp, err := srv.GetInstanceFile(instance, p)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := &remoteFile{resp: resp, body: body}
	if body != nil {
		stop := context.AfterFunc(ctx, func() { body.Close() })
		f.body = closeFunc{ReadCloser: body, onClose: func() { stop() }}
	}
	return f, nil
}

// closeFunc runs onClose after closing its ReadCloser.
type closeFunc struct {
	io.ReadCloser
	onClose func()
}

func (c closeFunc) Close() error {
	err := c.ReadCloser.Close()
	c.onClose()
	return err
}

// ctxReadSeeker is ctxio.Reader for upload bodies, which
// must seek.
type ctxReadSeeker struct {
	ctx context.Context
	io.ReadSeeker
}

func (r ctxReadSeeker) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.ReadSeeker.Read(p)
}

// linkTarget is how a transfer records a symlink's target inside the tree
// rooted at root (an instance path): LXD's file API reports every target
// resolved to a clean absolute path, so a target inside the tree is recorded
// relative to the link's directory and any other as absolute. Push and pull
// thus agree on a tree's digest, and a pulled tree's links stay inside it.
func linkTarget(root, linkRel, target string) string {
	dir := path.Join(root, path.Dir(linkRel))
	abs := path.Clean(target)
	if !path.IsAbs(target) {
		abs = path.Join(dir, target)
	}
	if abs != root && !strings.HasPrefix(abs, root+"/") {
		return abs
	}
	rel, err := filepath.Rel(dir, abs) // slash paths: this runs on Linux only
	if err != nil {
		return abs
	}
	return rel
}

// readTarget reads a symlink's target from its body.
func readTarget(ctx context.Context, body io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(ctxio.Reader(ctx, body), 4096))
	return string(b), err
}

// contentMatches reports whether body holds exactly size bytes with the hex
// sha256 sum; it stops reading after size+1 bytes.
func contentMatches(ctx context.Context, body io.Reader, size int64, sum string) (bool, error) {
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(ctxio.Reader(ctx, body), size+1))
	if err != nil {
		return false, err
	}
	return n == size && hex.EncodeToString(h.Sum(nil)) == sum, nil
}
