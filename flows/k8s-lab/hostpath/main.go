// Command hostpath-provisioner is the k8s lab's storage, as MicroK8s's hostpath-storage
// addon is: a PersistentVolumeClaim of the default StorageClass (microk8s-hostpath) gets a
// PersistentVolume that is a new directory under -dir on the node this provisioner runs
// on, pinned to that node; deleting the volume deletes the directory. Each lab member is
// a single-node cluster, so one replica on its node serves every claim.
//
// It is built from the Go module proxy (sigs.k8s.io/sig-storage-lib-external-provisioner
// does the watching, binding and retries) by scripts/k8s-bins.sh, as its own module so
// flow's own dependencies stay as they are.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v11/controller"
)

// hostPath provisions directories under dir on node.
type hostPath struct {
	dir, node string
}

var _ controller.Provisioner = (*hostPath)(nil)

// Provision makes the claim's directory and the PersistentVolume that names it. The
// directory is world-writable, as MicroK8s's are, so any pod's user can write to it.
func (p *hostPath) Provision(_ context.Context, opts controller.ProvisionOptions) (*v1.PersistentVolume, controller.ProvisioningState, error) {
	path := filepath.Join(p.dir, fmt.Sprintf("%s-%s-%s", opts.PVC.Namespace, opts.PVC.Name, opts.PVName))
	if err := os.MkdirAll(path, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("create %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o777); err != nil { // the umask took some bits
		return nil, controller.ProvisioningFinished, fmt.Errorf("chmod %s: %w", path, err)
	}
	reclaim := v1.PersistentVolumeReclaimDelete
	if opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			Capacity:                      v1.ResourceList{v1.ResourceStorage: opts.PVC.Spec.Resources.Requests[v1.ResourceStorage]},
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: path},
			},
			NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
				NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
					Key: "kubernetes.io/hostname", Operator: v1.NodeSelectorOpIn, Values: []string{p.node},
				}}}},
			}},
		},
	}
	return pv, controller.ProvisioningFinished, nil
}

// Delete removes the volume's directory; a volume of another node, or one whose path is
// not under dir, is left alone.
func (p *hostPath) Delete(_ context.Context, pv *v1.PersistentVolume) error {
	if pv.Spec.HostPath == nil {
		return errors.New("not a hostPath volume")
	}
	path := filepath.Clean(pv.Spec.HostPath.Path)
	if !strings.HasPrefix(path, filepath.Clean(p.dir)+string(filepath.Separator)) {
		return &controller.IgnoredError{Reason: fmt.Sprintf("%s is not under %s", path, p.dir)}
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

func main() {
	dir := flag.String("dir", "/var/snap/microk8s/common/default-storage", "where volumes' directories are made (the same path on the node)")
	name := flag.String("name", "microk8s.io/hostpath", "the provisioner name StorageClasses name")
	flag.Parse()
	node := os.Getenv("NODE_NAME")
	if node == "" {
		klog.Fatal("NODE_NAME is not set (the Deployment passes spec.nodeName)")
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		klog.Fatalf("in-cluster config: %v", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	ctx := context.Background()
	// One replica per single-node cluster: no leader election, and so no lease to clean up.
	pc := controller.NewProvisionController(ctx, client, *name, &hostPath{dir: *dir, node: node},
		controller.LeaderElection(false))
	klog.Infof("provisioning %s volumes under %s on %s", *name, *dir, node)
	pc.Run(ctx)
}
