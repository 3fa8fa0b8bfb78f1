package karmada

import "github.com/flowdev/flow/tasks"

// The in methods return a task with the local paths flow itself reads (kubeconfigs,
// karmada_data) taken from env's directory (tasks.Env.Dir); karmadactl runs there too
// (binary.run), so the paths only it reads resolve the same way.

func (i *Init) in(env *tasks.Env) *Init {
	cp := *i
	cp.Kubeconfig, cp.KarmadaData = env.InDir(i.Kubeconfig), env.InDir(i.KarmadaData)
	return &cp
}

func (j *Join) in(env *tasks.Env) *Join {
	cp := *j
	cp.Kubeconfig, cp.ClusterKubeconfig = env.InDir(j.Kubeconfig), env.InDir(j.ClusterKubeconfig)
	return &cp
}

func (r *Registration) in(env *tasks.Env) *Registration {
	cp := *r
	cp.Kubeconfig, cp.KarmadaKubeconfig = env.InDir(r.Kubeconfig), env.InDir(r.KarmadaKubeconfig)
	return &cp
}

func (t *Token) in(env *tasks.Env) *Token {
	cp := *t
	cp.Kubeconfig = env.InDir(t.Kubeconfig)
	return &cp
}

func (a *Addon) in(env *tasks.Env) *Addon {
	cp := *a
	cp.Kubeconfig, cp.KarmadaKubeconfig, cp.MemberKubeconfig = env.InDir(a.Kubeconfig), env.InDir(a.KarmadaKubeconfig), env.InDir(a.MemberKubeconfig)
	return &cp
}
