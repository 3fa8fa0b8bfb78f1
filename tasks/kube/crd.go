package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdPollInterval is how often a CRD's conditions are read while waiting; a wait
// is announced only once it lasts crdQuietWait, as a new CRD usually takes a moment.
const (
	crdPollInterval = 100 * time.Millisecond
	crdQuietWait    = 2 * time.Second
)

// definedKinds returns the group/version, Kind=kind strings (schema.GroupVersionKind's
// String) of every version a CRD manifest serves.
func definedKinds(crd *unstructured.Unstructured) []string {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []string
	for _, v := range versions {
		if vm, ok := v.(map[string]any); ok {
			name, _ := vm["name"].(string)
			out = append(out, schema.GroupVersionKind{Group: group, Version: name, Kind: kind}.String())
		}
	}
	return out
}

// waitEstablished polls CRD name until its Established condition is True. It fails
// at once when the API server rejected the CRD's names, and after timeout with the
// conditions it saw last.
func (ap *applier) waitEstablished(ctx context.Context, name string, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	label := fmt.Sprintf("CustomResourceDefinition %s", name)
	last, announced, start := "not read yet", false, time.Now()
	for {
		crd, err := ap.dyn.Resource(crdResource).Get(wctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			established, state, err := crdState(crd)
			if err != nil {
				return fmt.Errorf("%s: %w", label, err)
			}
			if established {
				if announced {
					fmt.Fprintf(ap.env.Stdout, "%s established\n", label)
				}
				return nil
			}
			last = state
		case apierrors.IsNotFound(err):
			last = "not found"
		case wctx.Err() == nil:
			last = err.Error()
		}
		if !announced && time.Since(start) >= crdQuietWait {
			fmt.Fprintf(ap.env.Stdout, "waiting for %s to be established\n", label)
			announced = true
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return fmt.Errorf("wait for %s: %w", label, ctx.Err())
			}
			return fmt.Errorf("%s not established after %s (last: %s)", label, timeout, last)
		case <-time.After(crdPollInterval):
		}
	}
}

// crdState reports whether crd is Established and describes its conditions; a
// NamesAccepted=False condition is an error, as waiting cannot fix it.
func crdState(crd *unstructured.Unstructured) (bool, string, error) {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	var parts []string
	established := false
	for _, c := range conds {
		cm, ok := c.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := cm["type"].(string)
		status, _ := cm["status"].(string)
		msg, _ := cm["message"].(string)
		if typ == "NamesAccepted" && status == "False" {
			return false, "", errors.New("names not accepted: " + msg)
		}
		established = established || (typ == "Established" && status == "True")
		parts = append(parts, fmt.Sprintf("%s=%s %s", typ, status, msg))
	}
	if len(parts) == 0 {
		return false, "no conditions yet", nil
	}
	return established, strings.Join(parts, "; "), nil
}
