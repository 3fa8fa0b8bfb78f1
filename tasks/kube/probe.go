package kube

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flowdev/flow/tasks"
)

// Probe reports the first object the run applied (its recorded objects output) that
// is gone from the server; without a recorded output there is nothing to look for.
func (a *Apply) Probe(ctx context.Context, env *tasks.Env, recorded tasks.Outputs) (string, error) {
	if recorded == nil {
		return "", nil
	}
	refs, err := a.appliedObjects(recorded)
	if err != nil {
		return "", err
	}
	ap, err := a.newApplier(env)
	if err != nil {
		return "", err
	}
	for _, ref := range refs {
		ri, label, err := ap.resource(ctx, ref)
		if err != nil {
			return "", err
		}
		if ri == nil {
			return label + " is gone: the server no longer serves its kind", nil
		}
		_, err = ri.Get(ctx, ref.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return label + " is gone", nil
		}
		if err != nil {
			return "", fmt.Errorf("get %s: %w", label, err)
		}
	}
	return "", nil
}

// Probe reports whether path no longer holds exactly what Run would write: the file
// was removed or edited, or the source changed since.
func (k *Kubeconfig) Probe(_ context.Context, env *tasks.Env, _ tasks.Outputs) (string, error) {
	src, err := k.load(env)
	if err != nil {
		return "", err
	}
	cfg, err := k.derive(src)
	if err != nil {
		return "", err
	}
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return "", fmt.Errorf("encode: %w", err)
	}
	return fileDrift(env.InDir(k.Path), k.Path, data)
}

var (
	_ tasks.Prober = (*Apply)(nil)
	_ tasks.Prober = (*Kubeconfig)(nil)
)
