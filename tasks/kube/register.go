package kube

import "github.com/flowdev/flow/tasks"

// Register adds the Kubernetes task types, kubeconfig and k8s_apply, to r.
func Register(r *tasks.Registry) error {
	return r.Add(kubeconfigType, applyType)
}
