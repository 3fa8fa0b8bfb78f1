package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// tarballLayer is the tar archive at path as one layer, byte for byte: names,
// modes (setuid included), owners, times, links and device nodes stay as the
// archive has them, so a root file system built elsewhere (mmdebstrap, tar)
// keeps what it needs. A plain tar is gzipped at go-containerregistry's fixed
// level, a gzipped one is used as it is; either way the same file gives the
// same digest. The file is read when the digest is computed and again when it
// is uploaded, never held in memory.
func tarballLayer(path string, mt types.MediaType) (v1.Layer, error) {
	if err := checkTar(path); err != nil {
		return nil, fmt.Errorf("layer tarball %q: %w", path, err)
	}
	l, err := tarball.LayerFromFile(path, tarball.WithMediaType(mt))
	if err != nil {
		return nil, fmt.Errorf("layer tarball %q: %w", path, err)
	}
	return l, nil
}

// checkTar reads the first header of the (possibly gzipped) tar at path, so
// that a wrong file fails here with its name rather than in a registry or a
// container runtime later.
func checkTar(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if head, _ := br.Peek(len(gzipMagic)); bytes.Equal(head, gzipMagic) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer gz.Close()
		r = gz
	}
	if _, err := tar.NewReader(r).Next(); err != nil {
		if err == io.EOF {
			return fmt.Errorf("empty tar archive")
		}
		return fmt.Errorf("not a tar or gzipped tar archive: %w", err)
	}
	return nil
}
