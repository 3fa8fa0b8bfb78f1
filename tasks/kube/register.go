package kube

import "github.com/flowdev/flow/tasks"

// Register adds the Kubernetes task types, kubeconfig and k8s_apply, to r.
func Register(r *tasks.Registry) error {
	for _, t := range []func() tasks.Type{kubeconfigType, applyType} {
		if err := r.Register(t()); err != nil {
			return err
		}
	}
	return nil
}
