package kube

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransientFault(t *testing.T) {
	cm := schema.GroupResource{Resource: "configmaps"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"429", apierrors.NewTooManyRequests("slow down", 1), "429 too many requests"},
		{"503", apierrors.NewServiceUnavailable("starting"), "server error 503"},
		{"500", apierrors.NewInternalError(errors.New("etcd")), "server error 500"},
		{"server timeout", apierrors.NewServerTimeout(cm, "get", 1), "server timeout"},
		{"timeout", apierrors.NewTimeoutError("slow", 1), "server timeout"},
		{"wrapped 503", fmt.Errorf("apply: %w", apierrors.NewServiceUnavailable("x")), "server error 503"},
		{"refused", fmt.Errorf("get: %w", syscall.ECONNREFUSED), "connection refused"},
		{"not found", apierrors.NewNotFound(cm, "x"), ""},
		{"forbidden", apierrors.NewForbidden(cm, "x", errors.New("no")), ""},
		{"invalid", apierrors.NewBadRequest("bad"), ""},
		{"conflict", apierrors.NewConflict(cm, "x", errors.New("changed")), ""},
		{"nil", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TransientFault(tt.err); got != tt.want {
				t.Errorf("TransientFault(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
