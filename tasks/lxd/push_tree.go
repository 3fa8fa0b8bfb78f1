package lxd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/internal/ctxio"
)

// pushSource is what lxd_file_push sends: literal content, one local file or
// a local tree, scanned up front so that matching files can be skipped.
type pushSource struct {
	ctx     context.Context // a scan of a big tree stops with it
	root    string          // local path; "" for content
	dest    string          // instance path the root goes to
	content *string         // literal content instead of root
	entries []fileEntry
	modes   map[string]int // local permission bits by rel
}

// defaultContentMode is the mode of a file written from content without a
// declared mode.
const defaultContentMode = 0o644

// scanPushSource lists and hashes root, or wraps content; dest is where a
// tree goes inside the instance, which its symlinks' digests depend on.
func scanPushSource(ctx context.Context, root string, content *string, dest string) (*pushSource, error) {
	if content != nil {
		return &pushSource{
			content: content,
			entries: []fileEntry{{kind: kindFile, size: int64(len(*content)), sum: sumString(*content)}},
			modes:   map[string]int{"": defaultContentMode},
		}, nil
	}
	src := &pushSource{ctx: ctx, root: root, dest: dest, modes: map[string]int{}}
	fi, err := os.Stat(root) // a symlink as source is followed
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("local source %s does not exist", root)
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return src, src.add("", root, fi)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			rel = ""
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return src.add(filepath.ToSlash(rel), p, info)
	})
	return src, err
}

// add records one local entry, hashing a file's content or a symlink's target.
func (s *pushSource) add(rel, local string, fi fs.FileInfo) error {
	e := fileEntry{rel: rel}
	switch {
	case fi.IsDir():
		e.kind = kindDir
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(local)
		if err != nil {
			return err
		}
		e.kind, e.target, e.sum = kindSymlink, target, sumString(linkTarget(s.dest, rel, target))
	case fi.Mode().IsRegular():
		f, err := os.Open(local)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if e.size, err = io.Copy(h, ctxio.Reader(s.ctx, f)); err != nil {
			return fmt.Errorf("read %s: %w", local, err)
		}
		e.kind, e.sum = kindFile, hex.EncodeToString(h.Sum(nil))
	default:
		return fmt.Errorf("%s is not a regular file, directory or symlink", local)
	}
	s.entries = append(s.entries, e)
	s.modes[rel] = int(fi.Mode().Perm())
	return nil
}

func (s *pushSource) isTree() bool { return s.entries[0].kind == kindDir }

// open returns the content of the file at rel.
func (s *pushSource) open(rel string) (io.ReadSeekCloser, error) {
	if s.content != nil {
		return nopCloser{strings.NewReader(*s.content)}, nil
	}
	return os.Open(filepath.Join(s.root, filepath.FromSlash(rel)))
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }

// pusher writes entries into one instance with one owner.
type pusher struct {
	ctx      context.Context
	srv      lxdclient.InstanceServer
	instance string
	uid, gid int64
	mode     int // of files; -1 means each file's local mode
	out      io.Writer
}

// ensureDir makes sure dir exists as a directory (or a symlink, taken to
// point at one), creating it and its missing parents with create.
func (w *pusher) ensureDir(dir string, create bool) error {
	if dir == "/" {
		return nil
	}
	have, err := statRemote(w.ctx, w.srv, w.instance, dir)
	if err != nil {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	have.close()
	switch {
	case have != nil && (have.resp.Type == kindDir || have.resp.Type == kindSymlink):
		return nil
	case have != nil:
		return fmt.Errorf("parent %s is a %s, not a directory", dir, have.resp.Type)
	case !create:
		return fmt.Errorf("parent directory %s does not exist (set create_dirs = true to create it)", dir)
	}
	if err := w.ensureDir(path.Dir(dir), create); err != nil {
		return err
	}
	args := lxdclient.InstanceFileArgs{Type: kindDir, Mode: treeDirMode, UID: 0, GID: 0}
	if err := w.srv.CreateInstanceFile(w.instance, dir, args); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	fmt.Fprintf(w.out, "created directory %s\n", dir)
	return nil
}

// push writes one entry to dst unless it already matches; it reports whether
// it wrote anything.
func (w *pusher) push(src *pushSource, e fileEntry, dst string) (bool, error) {
	have, err := statRemote(w.ctx, w.srv, w.instance, dst)
	if err != nil {
		return false, fmt.Errorf("stat %s: %w", dst, err)
	}
	defer have.close()
	switch e.kind {
	case kindDir:
		return w.pushDir(have, dst)
	case kindSymlink:
		return w.pushSymlink(have, e, dst)
	}
	mode := w.mode
	if mode < 0 {
		mode = src.modes[e.rel]
	}
	if have != nil {
		switch have.resp.Type {
		case kindDir:
			return false, fmt.Errorf("%s is a directory", dst)
		case kindFile:
			same, err := contentMatches(w.ctx, have.body, e.size, e.sum)
			if err != nil {
				return false, fmt.Errorf("read back %s: %w", dst, err)
			}
			sameMeta := have.resp.UID == w.uid && have.resp.GID == w.gid && have.resp.Mode == mode
			if same && sameMeta {
				return false, nil
			}
			if !sameMeta { // LXD keeps an overwritten file's owner and mode
				if err := w.remove(dst); err != nil {
					return false, err
				}
			}
		default:
			if err := w.remove(dst); err != nil {
				return false, err
			}
		}
	}
	have.close()
	f, err := src.open(e.rel)
	if err != nil {
		return false, err
	}
	defer f.Close()
	args := lxdclient.InstanceFileArgs{Type: kindFile, Content: ctxReadSeeker{w.ctx, f}, Mode: mode, UID: w.uid, GID: w.gid}
	if err := w.srv.CreateInstanceFile(w.instance, dst, args); err != nil {
		return false, fmt.Errorf("write %s: %w", dst, err)
	}
	fmt.Fprintf(w.out, "pushed %s (%d bytes)\n", dst, e.size)
	return true, nil
}

func (w *pusher) pushDir(have *remoteFile, dst string) (bool, error) {
	if have != nil {
		if have.resp.Type != kindDir {
			return false, fmt.Errorf("%s exists and is a %s, not a directory", dst, have.resp.Type)
		}
		return false, nil
	}
	args := lxdclient.InstanceFileArgs{Type: kindDir, Mode: treeDirMode, UID: w.uid, GID: w.gid}
	if err := w.srv.CreateInstanceFile(w.instance, dst, args); err != nil {
		return false, fmt.Errorf("create directory %s: %w", dst, err)
	}
	fmt.Fprintf(w.out, "created directory %s\n", dst)
	return true, nil
}

func (w *pusher) pushSymlink(have *remoteFile, e fileEntry, dst string) (bool, error) {
	if have != nil {
		switch have.resp.Type {
		case kindDir:
			return false, fmt.Errorf("%s is a directory", dst)
		case kindSymlink:
			target, err := readTarget(w.ctx, have.body)
			if err != nil {
				return false, fmt.Errorf("read back %s: %w", dst, err)
			}
			if target == resolveTarget(dst, e.target) {
				return false, nil
			}
		}
		if err := w.remove(dst); err != nil {
			return false, err
		}
	}
	args := lxdclient.InstanceFileArgs{Type: kindSymlink, Content: strings.NewReader(e.target), Mode: -1, UID: w.uid, GID: w.gid}
	if err := w.srv.CreateInstanceFile(w.instance, dst, args); err != nil {
		return false, fmt.Errorf("create symlink %s: %w", dst, err)
	}
	fmt.Fprintf(w.out, "linked %s -> %s\n", dst, e.target)
	return true, nil
}

// resolveTarget is a symlink's target the way LXD's file API reports it:
// clean and absolute.
func resolveTarget(link, target string) string {
	if path.IsAbs(target) {
		return path.Clean(target)
	}
	return path.Join(path.Dir(link), target)
}

func (w *pusher) remove(dst string) error {
	if err := w.srv.DeleteInstanceFile(w.instance, dst); err != nil {
		return fmt.Errorf("replace %s: delete: %w", dst, err)
	}
	return nil
}
