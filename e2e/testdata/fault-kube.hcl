# fault-kube.hcl — the flow of the e2e API server fault test (e2e/fault_kube_test.go).
#
# Waits for a kube-apiserver, applies a namespace and var.objects ConfigMaps (one request
# each, so the apply lasts long enough to be cut), then waits for the server again. The
# test kills and restarts the server during the first wait or during the apply; the run
# must succeed without a resume and without a retry block.

variable "kubeconfig" {
  type        = string
  description = "Kubeconfig of the test's API server."
}

variable "namespace" {
  type    = string
  default = "fault"
}

variable "objects" {
  type    = number
  default = 40
}

task "wait_ready" "api" {
  kind         = "kube_api"
  kubeconfig   = var.kubeconfig
  wait_timeout = "2m"
}

task "k8s_apply" "app" {
  kubeconfig = var.kubeconfig
  content = join("---\n", concat(
    ["apiVersion: v1\nkind: Namespace\nmetadata: {name: ${var.namespace}}\n"],
    [for i in range(var.objects) : "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm${i}, namespace: ${var.namespace}}\ndata: {index: \"${i}\"}\n"],
  ))
  depends_on = [wait_ready.api]
}

task "wait_ready" "after" {
  kind         = "kube_api"
  kubeconfig   = var.kubeconfig
  wait_timeout = "2m"
  depends_on   = [k8s_apply.app]
}
