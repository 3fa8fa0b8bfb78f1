// Package image owns the daemonless image task types, built on
// google/go-containerregistry: image_mirror copies images between registries,
// image_build assembles an image reproducibly from a base and local files, and
// image_export writes an image from a registry to a docker-archive tarball.
//
// Every registry call goes through one authenticated transport per registry and
// run (see sessions), which retries 408, 429 and 5xx answers with exponential
// backoff and honours Retry-After. Credentials come from authn.DefaultKeychain.
// Each type is idempotent: it first asks whether the result is already there
// (one manifest HEAD, or a look into the existing tarball) and then does nothing.
//
// It does not run registries or a container engine; tests start their own
// registries on loopback.
package image
