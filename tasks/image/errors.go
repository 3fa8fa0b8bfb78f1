package image

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// registryError is a registry failure with a short, stable message ("not
// found", "unauthorized", "connection refused") that still unwraps to the
// failure go-containerregistry reported, URL and all.
type registryError struct {
	msg string
	err error
}

func (e *registryError) Error() string { return e.msg }
func (e *registryError) Unwrap() error { return e.err }

// describe gives err its short message when there is one; other errors, and
// cancellation, pass through unchanged.
func describe(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return &registryError{"connection refused", err}
	}
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return err
	}
	switch terr.StatusCode {
	case http.StatusUnauthorized:
		return &registryError{"unauthorized", err}
	case http.StatusForbidden:
		return &registryError{"denied", err}
	case http.StatusNotFound:
		return &registryError{"not found", err}
	}
	return err
}

// isNotFound reports whether a registry answered err with 404.
func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// headFallback reports whether a GET may succeed where a HEAD for the same
// manifest failed with err: the registry answered, but not with a refusal, and
// some registries answer HEAD without the headers it needs.
func headFallback(err error) bool {
	var uerr *url.Error
	if errors.As(err, &uerr) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the request did not get through; a GET will not either
	}
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return true
	}
	switch terr.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusTooManyRequests:
		return false
	}
	return terr.StatusCode < 500
}
