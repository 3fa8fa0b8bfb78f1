package karmada

import (
	"context"
	"fmt"
	"time"

	"github.com/flowdev/flow/tasks"
)

// unjoinFlags is every flag of the `karmadactl unjoin` that flow destroy runs for a
// karmadactl_join, read from Join's attributes.
var unjoinFlags = flagTable{
	{"kubeconfig", "kubeconfig", kindString},
	{"context", "karmada-context", kindString},
	{"cluster_kubeconfig", "cluster-kubeconfig", kindString},
	{"cluster_context", "cluster-context", kindString},
	{"cluster_namespace", "cluster-namespace", kindString},
}

// Destroy unjoins the member with `karmadactl unjoin` unless Karmada has no Cluster
// object of that name.
func (j *Join) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	j = j.in(env)
	bin := newBinary(j.Karmadactl, j.KarmadactlVersion)
	cluster, err := getCluster(ctx, env, j.Kubeconfig, j.Context, j.Cluster)
	if err != nil {
		return fmt.Errorf("unjoin %q: %w", j.Cluster, err)
	}
	if cluster == nil {
		fmt.Fprintf(env.Stdout, "cluster %s already absent\n", j.Cluster)
		return nil
	}
	if err := bin.checkVersion(ctx, env); err != nil {
		return err
	}
	args, err := j.unjoinArgs()
	if err != nil {
		return fmt.Errorf("unjoin %q: %w", j.Cluster, err)
	}
	args = append(args, waitFlag(ctx))
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("karmadactl unjoin %q: %w", j.Cluster, err)
	}
	return nil
}

// defaultUnjoinWait is how long unjoin and unregister wait for Karmada to delete the
// Cluster when the task has no timeout. karmadactl's own 60 s is too short on a loaded
// machine: the Cluster's finalizer waits for its execution namespace to be emptied.
const defaultUnjoinWait = 5 * time.Minute

// waitFlag is karmadactl's --wait: what is left of ctx's deadline, or defaultUnjoinWait.
func waitFlag(ctx context.Context) string {
	wait := defaultUnjoinWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = max(time.Until(deadline), time.Second)
	}
	return "--wait=" + wait.Round(time.Second).String()
}

// Destroy removes the control plane with `karmadactl deinit --force` unless its
// namespace is gone, then etcd's hostPath data, which deinit leaves and the next init's
// etcd would otherwise serve.
func (i *Init) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	i = i.in(env)
	host, err := i.hostClient()
	if err != nil {
		return fmt.Errorf("karmadactl deinit in namespace %q: %w", i.namespace(), err)
	}
	present, err := namespacePresent(ctx, env, host, i.namespace())
	if err != nil {
		return fmt.Errorf("karmadactl deinit in namespace %q: %w", i.namespace(), err)
	}
	if !present {
		fmt.Fprintf(env.Stdout, "namespace %s already absent\n", i.namespace())
		return i.removeEtcdData(env)
	}
	bin := newBinary(i.Karmadactl, i.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return err
	}
	args := append([]string{"deinit", "--force"}, deinitFlags.args(i)...)
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("karmadactl deinit in namespace %q: %w", i.namespace(), err)
	}
	return i.removeEtcdData(env)
}

// unregisterFlags is every flag of the `karmadactl unregister` that flow destroy runs
// for a karmadactl_register, read from Registration's attributes.
var unregisterFlags = flagTable{
	{"kubeconfig", "cluster-kubeconfig", kindString},
	{"context", "cluster-context", kindString},
	{"namespace", "namespace", kindString},
	{"cluster_namespace", "cluster-namespace", kindString},
	{"karmada_kubeconfig", "karmada-config", kindString},
}

// Destroy unregisters the member with `karmadactl unregister` unless the member has
// none of register's objects and Karmada (when karmada_kubeconfig names it) no
// Cluster of that name. It reads only DestroyReads: the token is a secret, never
// stored, and unregister does not need it.
func (r *Registration) Destroy(ctx context.Context, env *tasks.Env, _ tasks.Outputs) error {
	r = r.in(env)
	client, host, err := r.memberClient()
	if err != nil {
		return fmt.Errorf("unregister %q: %w", r.ClusterName, err)
	}
	agent, err := r.agentState(ctx, env, client)
	if err != nil {
		return fmt.Errorf("unregister %q: member cluster %s: %w", r.ClusterName, host, err)
	}
	if agent == agentNone && r.KarmadaKubeconfig != "" {
		cluster, err := getCluster(ctx, env, r.KarmadaKubeconfig, "", r.ClusterName)
		if err != nil {
			return fmt.Errorf("unregister %q: %w", r.ClusterName, err)
		}
		if cluster != nil {
			agent = agentLeftovers
		}
	}
	if agent == agentNone {
		fmt.Fprintf(env.Stdout, "cluster %s already unregistered\n", r.ClusterName)
		return nil
	}
	bin := newBinary(r.Karmadactl, r.KarmadactlVersion)
	if err := bin.checkVersion(ctx, env); err != nil {
		return err
	}
	args := append([]string{"unregister", r.ClusterName}, unregisterFlags.args(r)...)
	args = append(args, waitFlag(ctx))
	if _, _, err := bin.run(ctx, env, args, env.Stdout, env.Stderr); err != nil {
		return fmt.Errorf("karmadactl unregister %q: %w", r.ClusterName, err)
	}
	return nil
}

var (
	_ tasks.Destroyer = (*Join)(nil)
	_ tasks.Destroyer = (*Init)(nil)
	_ tasks.Destroyer = (*Registration)(nil)
)
