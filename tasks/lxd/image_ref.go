package lxd

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	lxdclient "github.com/canonical/lxd/client"
)

// imageRemotes are the well-known image servers an image may name as
// "REMOTE:ALIAS", as the lxc CLI knows them.
var imageRemotes = map[string]string{
	"ubuntu":       "https://cloud-images.ubuntu.com/releases",
	"ubuntu-daily": "https://cloud-images.ubuntu.com/daily",
	"images":       "https://images.lxd.canonical.com",
}

// imageServerKeys are the keys of lxd_launch's image_server map.
var imageServerKeys = map[string]bool{"url": true, "protocol": true}

// imageRef is a parsed image reference. An empty server means the image
// store of the LXD server the task talks to.
type imageRef struct {
	server   string // URL of an image server, or "" for the local store
	protocol string // simplestreams or lxd
	name     string // alias or fingerprint
}

// isFingerprint reports whether a remote image reference looks like a fingerprint
// (prefix), 12 to 64 lower-case hex digits, rather than an alias. A loop, not a
// package-level regexp: `{12,64}` compiles to 64 copies of the class at start-up.
func (r imageRef) isFingerprint() bool {
	if len(r.name) < 12 || len(r.name) > 64 {
		return false
	}
	for _, c := range []byte(r.name) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseImage reads an image attribute: "ALIAS" or "FINGERPRINT" in the local
// store, "REMOTE:ALIAS" for a well-known remote, or a name on the server that
// imageServer describes. It touches no network.
func parseImage(image string, imageServer map[string]string) (imageRef, error) {
	if image == "" {
		return imageRef{}, errors.New("must not be empty")
	}
	remote, name, hasRemote := strings.Cut(image, ":")
	if len(imageServer) > 0 {
		if hasRemote {
			return imageRef{}, fmt.Errorf("%q names a remote, but image_server is set; give only the alias or fingerprint", image)
		}
		return imageRef{server: imageServer["url"], protocol: cmp.Or(imageServer["protocol"], "simplestreams"), name: image}, nil
	}
	if !hasRemote {
		return imageRef{name: image}, nil
	}
	url, known := imageRemotes[remote]
	if !known {
		return imageRef{}, fmt.Errorf("unknown remote %q in %q; known remotes are %s, or set image_server", remote, image, strings.Join(sortedKeys(imageRemotes), ", "))
	}
	if name == "" {
		return imageRef{}, fmt.Errorf("%q names no image after the remote", image)
	}
	return imageRef{server: url, protocol: "simplestreams", name: name}, nil
}

// validateImageServer checks lxd_launch's image_server map offline.
func validateImageServer(m map[string]string) error {
	if len(m) == 0 {
		return nil
	}
	for k := range m {
		if !imageServerKeys[k] {
			return fmt.Errorf("unknown key %q; known keys are protocol, url", k)
		}
	}
	if !strings.HasPrefix(m["url"], "https://") {
		return fmt.Errorf("url %q must start with https://", m["url"])
	}
	switch m["protocol"] {
	case "", "simplestreams", "lxd":
		return nil
	default:
		return fmt.Errorf("protocol %q must be simplestreams or lxd", m["protocol"])
	}
}

// errImageNotFound is wrapped when a local image is neither an alias nor a
// fingerprint in the store.
var errImageNotFound = errors.New("not found")

// resolveLocalImage returns the full fingerprint of an alias or (partial)
// fingerprint in the server's image store.
func resolveLocalImage(srv lxdclient.InstanceServer, name string) (string, error) {
	alias, _, err := srv.GetImageAlias(name)
	if err == nil {
		return alias.Target, nil
	}
	if !isNotFound(err) {
		return "", fmt.Errorf("image %q: get alias: %w", name, err)
	}
	img, _, err := srv.GetImage(name)
	if isNotFound(err) {
		return "", fmt.Errorf("image %q %w", name, errImageNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("image %q: %w", name, err)
	}
	return img.Fingerprint, nil
}
