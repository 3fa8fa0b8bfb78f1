package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
)

// epoch is the time stamped on every file, layer and config image_build makes,
// so that the same inputs always give the same digest.
var epoch = time.Unix(0, 0).UTC()

// layerSpec is one element of image_build's layers: files copied from source
// to destination, or a tar archive taken as the layer itself.
type layerSpec struct {
	source      string
	destination string // absolute; a trailing / means "into this directory"
	mode        int64  // unix permission bits, with setuid, setgid and sticky
	hasMode     bool
	tarball     string // a tar (or gzipped tar) file that is the layer, as it is
	dir         string // the directory relative source and tarball are in (tasks.Env.Dir)
}

// local is the file p (source or tarball, as the flow names it) names on this machine.
func (s layerSpec) local(p string) string {
	return (&tasks.Env{Dir: s.dir}).InDir(p)
}

// parseLayerSpec checks one layers element: source and destination required,
// mode optional and octal; or tarball alone.
func parseLayerSpec(m map[string]string) (layerSpec, error) {
	if _, ok := m["tarball"]; ok {
		return parseTarballSpec(m)
	}
	for k := range m {
		if k != "source" && k != "destination" && k != "mode" {
			return layerSpec{}, fmt.Errorf("unknown key %q; want source, destination, mode (or tarball alone)", k)
		}
	}
	s := layerSpec{source: m["source"], destination: m["destination"]}
	if s.source == "" || s.destination == "" {
		return layerSpec{}, fmt.Errorf("source and destination are required")
	}
	if !strings.HasPrefix(s.destination, "/") {
		return layerSpec{}, fmt.Errorf("destination %q must be an absolute path in the image", s.destination)
	}
	if !strings.HasSuffix(s.destination, "/") && path.Clean(s.destination) == "/" {
		return layerSpec{}, fmt.Errorf("destination %q names the image root; write \"/\" to copy into it", s.destination)
	}
	if mode, ok := m["mode"]; ok {
		v, err := strconv.ParseUint(mode, 8, 32)
		if err != nil || v > 0o7777 {
			return layerSpec{}, fmt.Errorf("mode %q is not an octal file mode like 0644", mode)
		}
		s.mode, s.hasMode = int64(v), true
	}
	return s, nil
}

// parseTarballSpec checks an element { tarball = PATH }, which takes no
// other key: the archive's own names, modes and owners are the layer's.
func parseTarballSpec(m map[string]string) (layerSpec, error) {
	for k := range m {
		if k != "tarball" {
			return layerSpec{}, fmt.Errorf("key %q cannot be combined with tarball: the archive is the layer as it is", k)
		}
	}
	if m["tarball"] == "" {
		return layerSpec{}, fmt.Errorf("tarball must name a tar file")
	}
	return layerSpec{tarball: m["tarball"]}, nil
}

// target is the path of the source's root in the image, without the leading /.
// A source without a name of its own ("." or "..") goes into a destination
// ending in / as its contents: joining ".." would climb out of the destination.
func (s layerSpec) target() string {
	dest := s.destination
	if base := filepath.Base(filepath.Clean(s.source)); strings.HasSuffix(dest, "/") && base != "." && base != ".." {
		dest = path.Join(dest, base)
	}
	return strings.TrimPrefix(path.Clean(dest), "/")
}

// buildLayer returns the gzipped tar of one layer. Entries come in lexical
// order with fixed times, owner 0:0 and normalised modes (0755 for
// directories and executables, 0644 for other files, mode when given), so the
// bytes depend only on the files' names, contents and executable bits. The
// layer is held in memory: image_build is for binaries and config files, not
// for trees of gigabytes.
func buildLayer(ctx context.Context, s layerSpec) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	target := s.target()
	if err := writeParents(tw, target); err != nil {
		return nil, err
	}
	// A source that is a symbolic link is followed, as COPY follows it: the
	// image gets what it points to, not a link into the build machine.
	root, err := filepath.EvalSymlinks(s.local(s.source))
	if err == nil {
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
			name := path.Join(target, filepath.ToSlash(rel))
			if name == "." {
				return nil // the image root: there already
			}
			return writeEntry(tw, p, name, s)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("layer %q: %w", s.source, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeParents adds the directories above target, as `COPY` creates them.
func writeParents(tw *tar.Writer, target string) error {
	dir := path.Dir(target)
	if dir == "." {
		return nil
	}
	var parents []string
	for ; dir != "." && dir != "/"; dir = path.Dir(dir) {
		parents = append(parents, dir)
	}
	for i := len(parents) - 1; i >= 0; i-- {
		if err := tw.WriteHeader(header(tar.TypeDir, parents[i]+"/", 0o755, 0)); err != nil {
			return err
		}
	}
	return nil
}

// writeEntry adds the file at p as name.
func writeEntry(tw *tar.Writer, p, name string, s layerSpec) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return tw.WriteHeader(header(tar.TypeDir, name+"/", 0o755, 0))
	case fi.Mode()&fs.ModeSymlink != 0:
		link, err := os.Readlink(p)
		if err != nil {
			return err
		}
		h := header(tar.TypeSymlink, name, 0o777, 0)
		h.Linkname = link
		return tw.WriteHeader(h)
	case fi.Mode().IsRegular():
		return writeFile(tw, p, name, fileMode(fi, s), fi.Size())
	default:
		return fmt.Errorf("%s: %s files cannot go into an image", p, fi.Mode().Type())
	}
}

func writeFile(tw *tar.Writer, p, name string, mode, size int64) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(header(tar.TypeReg, name, mode, size)); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// fileMode is mode when the spec sets it, else 0755 or 0644 by the
// executable bit: other permission bits depend on the checkout's umask.
func fileMode(fi fs.FileInfo, s layerSpec) int64 {
	switch {
	case s.hasMode:
		return s.mode
	case fi.Mode()&0o111 != 0:
		return 0o755
	default:
		return 0o644
	}
}

// header is a tar header owned by 0:0 and stamped with epoch; tar picks the
// same format for the same header every time.
func header(typ byte, name string, mode, size int64) *tar.Header {
	return &tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: size, ModTime: epoch}
}
