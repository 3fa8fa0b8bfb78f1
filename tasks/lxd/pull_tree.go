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
	"slices"
	"strings"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/internal/ctxio"
)

// maxSymlinkHops bounds how many symlinks pulling one file follows.
const maxSymlinkHops = 16

// puller copies files out of one instance with one local mode, counting what
// it changed.
type puller struct {
	ctx      context.Context
	srv      lxdclient.InstanceServer
	instance string
	mode     int
	out      io.Writer
	root     string // of the tree being pulled
	changed  int
}

// dirMode is the mode of local directories: the file mode plus x wherever it
// has r.
func dirMode(fileMode int) os.FileMode {
	return os.FileMode(fileMode | (fileMode&0o444)>>2)
}

// stat is statRemote with errors that name the path.
func (r *puller) stat(src string) (*remoteFile, error) {
	have, err := statRemote(r.ctx, r.srv, r.instance, src)
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", src, err)
	}
	if have == nil {
		return nil, fmt.Errorf("%s does not exist", src)
	}
	return have, nil
}

// pullOne pulls the file at src, following symlinks, to dest and returns its
// sha256.
func (r *puller) pullOne(src, dest string) (string, error) {
	for hops := 0; ; hops++ {
		have, err := r.stat(src)
		if err != nil {
			return "", err
		}
		switch have.resp.Type {
		case kindDir:
			return "", fmt.Errorf("%s is a directory (set recursive = true to pull it)", src)
		case kindSymlink:
			target, err := readTarget(r.ctx, have.body)
			have.close()
			if err != nil {
				return "", fmt.Errorf("read symlink %s: %w", src, err)
			}
			if hops == maxSymlinkHops {
				return "", fmt.Errorf("%s: too many levels of symlinks", src)
			}
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(src), target)
			}
			src = target
			continue
		}
		defer have.close()
		if err := os.MkdirAll(filepath.Dir(dest), dirMode(r.mode)); err != nil {
			return "", err
		}
		return r.writeFile(have, src, dest)
	}
}

// pullTree pulls the directory src into dest and returns the tree digest. A
// src that is not a directory is pulled as one file.
func (r *puller) pullTree(src, dest string) (string, error) {
	have, err := r.stat(src)
	if err != nil {
		return "", err
	}
	if have.resp.Type != kindDir {
		have.close()
		return r.pullOne(src, dest)
	}
	var entries []fileEntry
	r.root = src
	if err := r.walk(have, src, "", dest, &entries); err != nil {
		return "", err
	}
	return treeDigest(entries), nil
}

// walk pulls the entry have at src (rel below the tree's root) to dest and
// records it in entries; directories recursively.
func (r *puller) walk(have *remoteFile, src, rel, dest string, entries *[]fileEntry) error {
	defer have.close()
	if err := r.ctx.Err(); err != nil {
		return err
	}
	e := fileEntry{rel: rel, kind: have.resp.Type}
	switch have.resp.Type {
	case kindFile:
		sum, err := r.writeFile(have, src, dest)
		if err != nil {
			return err
		}
		e.sum = sum
	case kindSymlink:
		target, err := readTarget(r.ctx, have.body)
		if err != nil {
			return fmt.Errorf("read symlink %s: %w", src, err)
		}
		target = linkTarget(r.root, rel, target)
		if err := r.writeSymlink(target, dest); err != nil {
			return err
		}
		e.target, e.sum = target, sumString(target)
	case kindDir:
		if err := r.makeDir(dest); err != nil {
			return err
		}
		names := slices.Sorted(slices.Values(have.resp.Entries))
		for _, name := range names {
			if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
				return fmt.Errorf("directory %s lists a bad entry name %q", src, name)
			}
			child, err := r.stat(path.Join(src, name))
			if err != nil {
				return err
			}
			if err := r.walk(child, path.Join(src, name), path.Join(rel, name), filepath.Join(dest, name), entries); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s is a %s, which cannot be pulled", src, have.resp.Type)
	}
	*entries = append(*entries, e)
	return nil
}

func (r *puller) makeDir(dest string) error {
	fi, err := os.Lstat(dest)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("local %s exists and is not a directory", dest)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.MkdirAll(dest, dirMode(r.mode)); err != nil {
		return err
	}
	r.changed++
	return nil
}

// writeFile copies the file have (at src) to dest through a temporary file
// beside it, unless dest already has the same content and mode; it returns
// the content's sha256.
func (r *puller) writeFile(have *remoteFile, src, dest string) (string, error) {
	if fi, err := os.Lstat(dest); err == nil && fi.IsDir() {
		return "", fmt.Errorf("local %s is a directory", dest)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".flow-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), ctxio.Reader(r.ctx, have.body))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if localFileMatches(dest, n, sum, r.mode) {
		return sum, nil
	}
	if err := os.Chmod(tmp.Name(), os.FileMode(r.mode)); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return "", err
	}
	r.changed++
	fmt.Fprintf(r.out, "pulled %s to %s (%d bytes)\n", src, dest, n)
	return sum, nil
}

// writeSymlink makes dest a symlink to target, replacing what is there
// atomically unless it already is one.
func (r *puller) writeSymlink(target, dest string) error {
	fi, err := os.Lstat(dest)
	if err == nil && fi.IsDir() {
		return fmt.Errorf("local %s is a directory", dest)
	}
	if have, err := os.Readlink(dest); err == nil && have == target {
		return nil
	}
	tmp := filepath.Join(filepath.Dir(dest), "."+filepath.Base(dest)+".flow-link")
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return err
	}
	r.changed++
	fmt.Fprintf(r.out, "linked %s -> %s\n", dest, target)
	return nil
}

// localFileMatches reports whether dest is a regular file with the given
// size, sha256 and mode.
func localFileMatches(dest string, size int64, sum string, mode int) bool {
	fi, err := os.Lstat(dest)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size || int(fi.Mode().Perm()) != mode {
		return false
	}
	f, err := os.Open(dest)
	if err != nil {
		return false
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return hex.EncodeToString(h.Sum(nil)) == sum
}
