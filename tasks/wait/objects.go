package wait

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The wait kinds read Nodes, Deployments, Pods and Events through the dynamic
// client into the few fields they judge, declared here, rather than through
// client-go's typed clientset: linking that clientset registers every built-in
// API type at start-up, which every flow command paid for (docs/performance.md).

var (
	nodeResource       = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	podResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	eventResource      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	deploymentResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// objCondition is one entry of status.conditions.
type objCondition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

type node struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Conditions []objCondition `json:"conditions,omitempty"`
	} `json:"status"`
}

type deployment struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32                `json:"replicas,omitempty"`
		Selector *metav1.LabelSelector `json:"selector,omitempty"`
	} `json:"spec"`
	Status struct {
		ObservedGeneration int64          `json:"observedGeneration,omitempty"`
		UpdatedReplicas    int32          `json:"updatedReplicas,omitempty"`
		AvailableReplicas  int32          `json:"availableReplicas,omitempty"`
		Conditions         []objCondition `json:"conditions,omitempty"`
	} `json:"status"`
}

type pod struct {
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Phase                 string            `json:"phase,omitempty"`
		Reason                string            `json:"reason,omitempty"`
		Message               string            `json:"message,omitempty"`
		PodIP                 string            `json:"podIP,omitempty"`
		Conditions            []objCondition    `json:"conditions,omitempty"`
		InitContainerStatuses []containerStatus `json:"initContainerStatuses,omitempty"`
		ContainerStatuses     []containerStatus `json:"containerStatuses,omitempty"`
	} `json:"status"`
}

type containerStatus struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	State struct {
		Waiting *struct {
			Reason  string `json:"reason,omitempty"`
			Message string `json:"message,omitempty"`
		} `json:"waiting,omitempty"`
		Terminated *struct {
			Reason   string `json:"reason,omitempty"`
			ExitCode int32  `json:"exitCode"`
		} `json:"terminated,omitempty"`
	} `json:"state"`
	RestartCount int32 `json:"restartCount"`
}

type event struct {
	metav1.ObjectMeta `json:"metadata"`
	InvolvedObject    struct {
		Name string `json:"name"`
		UID  string `json:"uid,omitempty"`
	} `json:"involvedObject"`
	Reason         string           `json:"reason,omitempty"`
	Message        string           `json:"message,omitempty"`
	Type           string           `json:"type,omitempty"`
	LastTimestamp  metav1.Time      `json:"lastTimestamp,omitempty"`
	EventTime      metav1.MicroTime `json:"eventTime,omitempty"`
	FirstTimestamp metav1.Time      `json:"firstTimestamp,omitempty"`
}

// when is the latest time an event says it happened. The object's creation time counts
// only when the event gives none: a recorder may create an event after the fact (and
// within the same second as a later one), so it would misorder them.
func (e *event) when() metav1.Time {
	var t metav1.Time
	for _, c := range []metav1.Time{e.FirstTimestamp, {Time: e.EventTime.Time}, e.LastTimestamp} {
		if t.Before(&c) {
			t = c
		}
	}
	if t.IsZero() {
		return e.CreationTimestamp
	}
	return t
}

// getAs reads one object into T.
func getAs[T any](ctx context.Context, r dynamic.ResourceInterface, name string) (*T, error) {
	u, err := r.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return fromUnstructured[T](u)
}

// listAs lists objects into Ts.
func listAs[T any](ctx context.Context, r dynamic.ResourceInterface, opts metav1.ListOptions) ([]T, error) {
	list, err := r.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	items := make([]T, 0, len(list.Items))
	for i := range list.Items {
		v, err := fromUnstructured[T](&list.Items[i])
		if err != nil {
			return nil, err
		}
		items = append(items, *v)
	}
	return items, nil
}

func fromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	v := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return v, nil
}
