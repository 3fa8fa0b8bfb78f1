# metrics.hcl — metrics-server in every cluster of the lab (the members and the host
# cluster), as MicroK8s's metrics-server addon installs it: the resource metrics API,
# metrics.k8s.io, that `kubectl top`, a HorizontalPodAutoscaler and Karmada's
# karmada-metrics-adapter (FederatedHPA, `karmadactl top`) read from each member. Built
# here from its module (bins.hcl, images.hcl), installed from member/metrics-server.yaml
# (upstream's components.yaml), served through each API server's aggregation layer, whose
# front proxy certificates member/pki.sh writes and member/up.sh hands the API server. Off
# in the plain lab; vars/karmada-e2e.hcl turns it on.
#
# One file of the flows/k8s-lab flow: it uses local.clusters, local.member_dir,
# kubeconfig.member, wait_ready.member_node and image_mirror.lab; what it declares,
# var.metrics_server and local.metrics_server_version, is read by bins.hcl and images.hcl.

variable "metrics_server" {
  type        = bool
  default     = false
  description = "Build metrics-server and run it in every cluster (metrics.k8s.io: kubectl top, HPAs, Karmada's FederatedHPA). vars/karmada-e2e.hcl turns it on."
}

locals {
  # member/metrics-server.yaml names the same tag: change both together.
  metrics_server_version  = "v0.8.0"
  metrics_server_clusters = var.metrics_server ? local.clusters : {}
}

task "k8s_apply" "metrics_server" {
  for_each   = local.metrics_server_clusters
  kubeconfig = kubeconfig.member[each.key].path
  content    = file("${local.member_dir}/metrics-server.yaml")
  depends_on = [wait_ready.member_node[each.key], image_mirror.lab]
}

task "wait_ready" "metrics_server" {
  for_each     = local.metrics_server_clusters
  kind         = "deployment"
  kubeconfig   = kubeconfig.member[each.key].path
  namespace    = "kube-system"
  name         = "metrics-server"
  interval     = "1s"
  wait_timeout = "5m"
  depends_on   = [k8s_apply.metrics_server[each.key]]
}

# The API served: the aggregator reaches metrics-server with the front proxy's certificate.
# An API server without the aggregation flags stops here; a kubelet metrics-server cannot
# scrape stops the Deployment before (its readiness wants a first scrape).
task "wait_ready" "metrics_api" {
  for_each     = local.metrics_server_clusters
  kind         = "condition"
  kubeconfig   = kubeconfig.member[each.key].path
  api_version  = "apiregistration.k8s.io/v1"
  object_kind  = "APIService"
  name         = "v1beta1.metrics.k8s.io"
  condition    = "Available"
  interval     = "1s"
  wait_timeout = "5m"
  depends_on   = [wait_ready.metrics_server[each.key]]
}

output "metrics_server" {
  description = "The clusters whose metrics.k8s.io metrics-server serves."
  value       = sort(keys(wait_ready.metrics_api))
}
