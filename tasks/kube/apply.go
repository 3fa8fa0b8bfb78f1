package kube

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/zclconf/go-cty/cty"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Apply server-side applies Kubernetes manifests: Namespaces first, then
// CustomResourceDefinitions (waiting until each is Established), then everything
// else in document order. It is the hcl config struct of the k8s_apply task type.
type Apply struct {
	Files        []string       `hcl:"files,optional" doc:"Manifest files to apply, in order; a directory stands for its *.yaml, *.yml and *.json files, sorted by name. At least one of files and content is required."`
	Content      string         `hcl:"content,optional" doc:"Manifests as YAML text, applied after files, e.g. a templatefile() result. It is never printed."`
	Namespace    string         `hcl:"namespace,optional" doc:"Namespace for namespaced objects that name none; default \"default\". Cluster-scoped objects never get one."`
	FieldManager *string        `hcl:"field_manager,optional" doc:"Field manager of the server-side apply; default \"flow\"."`
	Force        bool           `hcl:"force,optional" doc:"Take over fields another field manager owns instead of failing on the conflict; default false."`
	CRDTimeout   tasks.Duration `hcl:"crd_timeout,optional" doc:"How long to wait for each applied CustomResourceDefinition to be Established; default \"1m\"."`
	Kubeconfig   string         `hcl:"kubeconfig,optional" doc:"Path of the kubeconfig file; default $KUBECONFIG, then ~/.kube/config, as kubectl."`
	Context      string         `hcl:"context,optional" doc:"Context in the kubeconfig to use; default its current-context."`
}

// Defaults of the optional attributes.
const (
	defaultFieldManager = "flow"
	defaultNamespace    = "default"
	defaultCRDTimeout   = time.Minute
)

func applyType() tasks.Type {
	return tasks.Type{
		Name:    "k8s_apply",
		Summary: "Server-side apply Kubernetes manifests",
		Doc: `Applies the objects in files and content with server-side apply, as field manager
field_manager. Documents are separated by "---"; "kind: List" documents stand for their
items. Namespaces are applied first, then CustomResourceDefinitions, which must each
become Established within crd_timeout, then every other object in document order, so
custom resources may come before their definitions in the text.

Every kind is looked up on the server before anything is applied: a kind the server does
not serve and no CustomResourceDefinition in the manifests defines fails the task,
naming the file, the document and the object. A field another field manager owns fails
the task unless force is true.

One line is printed per object: "created", "configured" or "unchanged" (its
resourceVersion did not change), then apiVersion, kind and namespace/name. Applying the
same manifests again changes nothing.`,
		New: func() tasks.Task { return &Apply{} },
		Outputs: []tasks.Output{
			{Name: "objects", Type: cty.List(objectRefType), Doc: "The applied objects in apply order, each an object with api_version, kind, namespace (empty for cluster-scoped objects) and name."},
		},
		Refresh: "every object the run applied (its objects output) still exists",
		Undo:    "flow destroy deletes the objects the run applied (its objects output), in reverse order; objects that are gone already are skipped. Namespaces it applied go with everything in them.",
		Example: `task "k8s_apply" "nginx" {
  kubeconfig    = kubeconfig.member1.path
  context       = "member1"
  files         = ["manifests/namespace.yaml", "manifests/nginx"]
  content       = <<-EOT
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: nginx-index
    data:
      index.html: hello
  EOT
  namespace     = "web"
  field_manager = "flow"
  force         = false
  crd_timeout   = "2m"
}`,
	}
}

// objectRefType is the type of one element of the objects output.
var objectRefType = cty.Object(map[string]cty.Type{
	"api_version": cty.String,
	"kind":        cty.String,
	"namespace":   cty.String,
	"name":        cty.String,
})

// Validate checks that there is something to apply, that names and durations are
// well-formed; it reads no file.
func (a *Apply) Validate() error {
	if len(a.Files) == 0 && a.Content == "" {
		return &tasks.AttrError{Attr: "files", Err: errors.New("one of files or content is required")}
	}
	for _, f := range a.Files {
		if f == "" {
			return &tasks.AttrError{Attr: "files", Err: errors.New("paths must not be empty")}
		}
	}
	if a.Namespace != "" {
		if errs := validation.IsDNS1123Label(a.Namespace); len(errs) > 0 {
			return &tasks.AttrError{Attr: "namespace", Err: fmt.Errorf("%q is not a valid namespace: %s", a.Namespace, strings.Join(errs, "; "))}
		}
	}
	if a.FieldManager != nil && (*a.FieldManager == "" || len(*a.FieldManager) > 128) {
		return &tasks.AttrError{Attr: "field_manager", Err: errors.New("must be 1 to 128 characters")}
	}
	if _, err := a.crdTimeout(); err != nil {
		return err
	}
	return nil
}

func (a *Apply) crdTimeout() (time.Duration, error) {
	return a.CRDTimeout.Positive("crd_timeout", defaultCRDTimeout)
}

func (a *Apply) fieldManager() string {
	if a.FieldManager == nil {
		return defaultFieldManager
	}
	return *a.FieldManager
}

func (a *Apply) namespace() string {
	if a.Namespace == "" {
		return defaultNamespace
	}
	return a.Namespace
}

var _ tasks.Task = (*Apply)(nil)
