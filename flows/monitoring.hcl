# monitoring.hcl — the seed's Prometheus: deployed straight into one member (not through
# Karmada), then published on the host at 127.0.0.1:9091 by an LXD proxy device that
# connects, inside the member container, to the Prometheus pod's IP. Needs flows/lab.hcl
# to have run.
#
#   sudo flow run flows/monitoring.hcl --state .flow/monitoring.db
#   curl http://127.0.0.1:9091/-/ready                   # Prometheus Server is Ready.
#   sudo flow resume --state .flow/monitoring.db      # after an interruption or a failure
#   docs/flows/monitoring.md                             # variables, re-runs, removal

variable "member" {
  type        = string
  default     = "member1"
  description = "The member container (and cluster) Prometheus runs in."
}

variable "host_port" {
  type        = number
  default     = 9091
  description = "Host port on 127.0.0.1 forwarded to Prometheus's port 9090."
}

# On an LXD cluster (flows/k8s-lab/vars/lxd-cluster.hcl, make demo-cluster): the member's
# container is reached through the cluster's remote, and the host port listens on the
# address of the cluster member it runs on.
variable "lxd_remote" {
  type        = map(string)
  default     = null
  description = "The LXD remote the member container runs on (flows/k8s-lab's lxd_remote); null, this machine's daemon."
}

variable "targets" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: the cluster member each container was placed on (flows/k8s-lab's targets)."
}

variable "member_addresses" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: each cluster member's address (flows/k8s-lab's member_addresses); the host port listens on the member's."
}

variable "namespace" {
  type        = string
  default     = "monitoring"
  description = "Namespace of Prometheus in the member."
}

variable "image" {
  type        = string
  default     = "docker.io/prom/prometheus:v2.53.3"
  description = "Prometheus image; the member pulls it itself."
}

variable "retention" {
  type        = string
  default     = "24h"
  description = "How long Prometheus keeps samples (--storage.tsdb.retention.time)."
}

variable "scrape_interval" {
  type    = string
  default = "30s"
}

variable "kubernetes_discovery" {
  type        = bool
  default     = true
  description = "Find the API servers and annotated pods with Kubernetes service discovery; false scrapes the API server by its Service name instead (for a Prometheus built without it, as Debian's is)."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where flows/lab.hcl wrote the members' kubeconfigs, as MEMBER.config."
}

locals {
  kubeconfig = "${var.config_dir}/${var.member}.config"
}

task "k8s_apply" "prometheus" {
  kubeconfig = local.kubeconfig
  content = templatefile("${path.flow}/lab/monitoring.yaml.tftpl", {
    namespace            = var.namespace
    image                = var.image
    retention            = var.retention
    scrape_interval      = var.scrape_interval
    kubernetes_discovery = var.kubernetes_discovery
  })
}

task "wait_ready" "prometheus" {
  kind         = "pods"
  kubeconfig   = local.kubeconfig
  namespace    = var.namespace
  selector     = "app.kubernetes.io/name=prometheus"
  min_count    = 1
  interval     = "2s"
  wait_timeout = "5m"
  depends_on   = [k8s_apply.prometheus]
}

# The seed forwarded the host port straight to the pod: the pod network is routed inside the
# member container, not on the host. A pod IP lasts only as long as its pod, so a new pod
# (a restart, a new image) changes the address and the next run replaces the device.
task "proxy_device" "prometheus" {
  remote   = var.lxd_remote
  instance = var.member
  name     = "prometheus"
  listen   = "tcp:${var.lxd_remote == null ? "127.0.0.1" : var.member_addresses[var.targets[var.member]]}:${var.host_port}"
  connect  = "tcp:${wait_ready.prometheus.pod_ips[0]}:9090"
  recreate = true
}

task "wait_ready" "forwarded" {
  kind         = "http"
  url          = "http://${proxy_device.prometheus.address}/-/ready"
  body_match   = "Ready"
  interval     = "2s"
  wait_timeout = "2m"
}

output "prometheus" {
  value = "http://${proxy_device.prometheus.address}/"
}

output "pod" {
  value = wait_ready.prometheus.pods[0]
}
