// Package image owns the daemonless image task types (image_mirror,
// image_build, image_export) built on google/go-containerregistry. It does not
// run registries; tests start their own on loopback.
package image

import (
	_ "github.com/google/go-containerregistry/pkg/authn"
	_ "github.com/google/go-containerregistry/pkg/registry"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/random"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
)
