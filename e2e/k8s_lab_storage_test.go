package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkK8sLabStorage: MicroK8s's hostpath-storage in every cluster of the lab. A claim of
// the default StorageClass binds, a pod writes a file on it and ends, and a second pod
// finds the file: it outlived the pod that wrote it. Everything is deleted afterwards,
// the volume's directory with it.
func checkK8sLabStorage(t *testing.T, configDir string) {
	t.Helper()
	for member := range labMembers {
		c := clientset(t, filepath.Join(configDir, member+".config"))
		if err := checkStorage(context.Background(), c, member); err != nil {
			t.Errorf("storage in %s: %v", member, err)
		}
	}
}

func checkStorage(ctx context.Context, c kubernetes.Interface, member string) error {
	const ns, claim = "default", "flow-e2e-data"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{ // no class: the default one
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}
	if _, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create claim: %w", err)
	}
	defer c.CoreV1().PersistentVolumeClaims(ns).Delete(context.Background(), claim, metav1.DeleteOptions{})
	if err := poll(ctx, 2*time.Minute, func() (bool, error) {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.ClaimBound, err
	}); err != nil {
		return fmt.Errorf("claim never bound: %w", err)
	}
	write := fmt.Sprintf("echo %s >/data/proof", member)
	read := fmt.Sprintf("grep -qx %s /data/proof", member)
	for i, script := range []string{write, read} {
		name := fmt.Sprintf("flow-e2e-storage-%d", i)
		if err := runPodToEnd(ctx, c, ns, name, claim, script); err != nil {
			return fmt.Errorf("pod %s (%s): %w", name, script, err)
		}
	}
	return nil
}

// runPodToEnd runs script in a pod with the claim at /data and requires it to succeed.
func runPodToEnd(ctx context.Context, c kubernetes.Interface, ns, name, claim, script string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "c", Image: "localhost:32000/debian:bookworm", Command: []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer func() {
		zero := int64(0)
		c.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		poll(context.Background(), time.Minute, func() (bool, error) {
			_, err := c.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
			return err != nil, nil
		})
	}()
	var phase corev1.PodPhase
	err := poll(ctx, 3*time.Minute, func() (bool, error) {
		got, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = got.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	if err != nil {
		return err
	}
	if phase != corev1.PodSucceeded {
		return fmt.Errorf("ended %s", phase)
	}
	return nil
}

// poll calls cond every second until it is true, it fails, or limit passes.
func poll(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("not within %s (last error: %v)", limit, last)
}
