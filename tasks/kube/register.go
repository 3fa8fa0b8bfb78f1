package kube

import "github.com/flowdev/flow/tasks"

// Register adds the Kubernetes task types, kubeconfig, k8s_apply and k8s_job, to r.
func Register(r *tasks.Registry) error {
	return r.Add(kubeconfigType, applyType, jobType)
}
