package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/flowdev/flow/tasks"
)

// The build cache remembers, per push reference, what the inputs of the last build pushed
// there looked like on disk (names, sizes, modes, times) and the digest it got. Reading
// that costs a stat per file; building costs reading and compressing every byte, which
// for root-file-system layers is seconds. So a build whose inputs are unchanged is checked
// with one HEAD instead of being built again. The cache is a hint, never the truth: the
// registry must still hold that digest under the tag, or the image is built as usual.
//
// It is used only for a push without a tarball and with a base pinned by digest (or no
// base): a base given by tag may have moved without any local file changing.

// buildCacheFormat changes whenever the way layers are built does, so that a newer flow
// never trusts a digest an older one computed.
const buildCacheFormat = "flow image_build cache v1"

func buildCacheDir() string {
	if d := os.Getenv("FLOW_BUILD_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "flow", "image-build")
	}
	return ""
}

// cacheable reports whether b's digest is determined by b and its local files alone.
func (b *Build) cacheable() bool {
	return b.Push != "" && b.Tarball == "" &&
		(b.Base == "" || b.Base == "scratch" || strings.Contains(b.Base, "@sha256:"))
}

// inputsKey hashes b's attributes and the file-system metadata of every layer's files,
// relative sources taken from env's directory.
func (b *Build) inputsKey(env *tasks.Env) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode([]any{buildCacheFormat, b}); err != nil {
		return "", err
	}
	for _, l := range b.Layers {
		path := l["source"]
		if path == "" {
			path = l["tarball"]
		}
		root, err := filepath.EvalSymlinks(env.InDir(path)) // a source that is itself a link is followed
		if err != nil {
			return "", err
		}
		err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			target, _ := os.Readlink(p)
			_, err = fmt.Fprintf(h, "%s\x00%v\x00%d\x00%d\x00%s\n", p, info.Mode(), info.Size(), info.ModTime().UnixNano(), target)
			return err
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func buildCacheFile(push string) string {
	dir := buildCacheDir()
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(push))
	return filepath.Join(dir, hex.EncodeToString(sum[:16]))
}

// cachedDigest returns the digest the last build with inputs key pushed to push got.
func cachedDigest(push, key string) (v1.Hash, bool) {
	path := buildCacheFile(push)
	if path == "" {
		return v1.Hash{}, false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return v1.Hash{}, false
	}
	got, digest, ok := strings.Cut(strings.TrimSpace(string(data)), " ")
	if !ok || got != key {
		return v1.Hash{}, false
	}
	h, err := v1.NewHash(digest)
	return h, err == nil
}

// rememberDigest records that inputs key built digest, pushed to push. Failing to write
// the cache costs only a rebuild next time, so errors are ignored.
func rememberDigest(push, key string, digest v1.Hash) {
	path := buildCacheFile(push)
	if path == "" || os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return
	}
	_, werr := fmt.Fprintf(tmp, "%s %s\n", key, digest)
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}
