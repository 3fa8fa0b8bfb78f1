package image

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowdev/flow/tasks"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// saveTarball writes img to path as a docker archive named ref, unless path
// already holds it. A docker archive keeps no manifest, so "holds it" means
// the same config digest (the image ID, which covers every layer's content)
// under the same name.
func saveTarball(path string, ref name.Reference, img v1.Image, env *tasks.Env) error {
	want, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("tarball %q: %w", path, err)
	}
	if tarballHolds(path, ref, want) {
		fmt.Fprintf(env.Stdout, "%s: %s already present\n", path, ref)
		return nil
	}
	if err := writeAtomically(path, func(f *os.File) error {
		w := bufio.NewWriterSize(f, 1<<20)
		if err := tarball.Write(ref, img, w); err != nil {
			return err
		}
		return w.Flush()
	}); err != nil {
		return fmt.Errorf("tarball %q: %w", path, describe(err))
	}
	fmt.Fprintf(env.Stdout, "wrote %s (%s, image ID %s)\n", path, ref, want)
	return nil
}

// tarballHolds reports whether the docker archive at path has the image with
// config digest want, under ref's tag when ref has one.
func tarballHolds(path string, ref name.Reference, want v1.Hash) bool {
	var tag *name.Tag
	if t, ok := ref.(name.Tag); ok {
		tag = &t
	}
	img, err := tarball.ImageFromPath(path, tag)
	if err != nil {
		return false
	}
	got, err := img.ConfigName()
	return err == nil && got == want
}

// writeAtomically creates path with mode 0644 through a temporary file in the
// same directory, so a reader (or a killed run) never sees half a file. It
// first removes the temporaries of earlier runs killed while writing path.
func writeAtomically(path string, write func(*os.File) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmpPrefix := "." + filepath.Base(path) + ".tmp-"
	removeTemporaries(dir, tmpPrefix)
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// removeTemporaries deletes what runs killed while writing left in dir: files
// named prefix*, each possibly as large as the tarball. Best effort: a file
// that stays only costs space.
func removeTemporaries(dir, prefix string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
