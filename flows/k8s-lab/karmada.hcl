# karmada.hcl — Karmada on the lab, by flows/modules/karmada, the phase flows/lab.hcl runs
# on a real Ubuntu server: `karmadactl init` installs the control plane as pods in the host
# cluster (every image from localhost:32000), the push members are joined, the pull members
# registered (karmada-agent runs in them), and nginx is propagated to the members.
#
# What differs from the seed is only how the pieces reach one another. The host reaches
# everything on its loopback only, and a pod reaches nothing outside its cluster's
# container, so proxy devices carry each path:
#   this machine → Karmada's API server:  127.0.0.1:KARMADA_PORT → the host cluster's NodePort
#   Karmada → a member (push or pull):    ADDRESS:PORT in the host cluster → ADDRESS:PORT here
#   karmada-agent → Karmada's API server:  10.1.0.1:KARMADA_PORT in the member → 127.0.0.1:KARMADA_PORT
# A member has one endpoint, https://ADDRESS:PORT (its host's address, 127.0.0.1 on one
# host), the same from this machine and from Karmada: the components that dial members
# (karmada-controller-manager, karmada-aggregated-apiserver, whose cluster proxy serves
# every member) run on the host cluster node's network, where a proxy device listens at
# each member's ADDRESS:PORT. The Clusters' apiEndpoints and the kubeconfigs name it.
# 10.1.0.1 is each cluster's own pod bridge (cni0), inside its container's network
# namespace; the agent's kubeconfig names it.

variable "pull_members" {
  type        = list(string)
  default     = ["member3"]
  description = "Members registered in pull mode (karmada-agent runs in them); the others are joined in push mode."
}

variable "karmada_port" {
  type        = number
  default     = 32443
  description = "Karmada API server's NodePort in the host cluster, and the host port forwarded to it."
}

variable "karmada_feature_gates" {
  type        = string
  default     = "Failover=true"
  description = "karmada-controller-manager's --feature-gates; Failover, off by default in v1.13, is what the failover drill's policy needs. vars/karmada-e2e.hcl has upstream's e2e value."
}

variable "karmada_controllers" {
  type        = string
  default     = ""
  description = "karmada-controller-manager's --controllers; \"\" keeps Karmada's default set."
}

variable "karmada_failover_eviction_timeout" {
  type        = string
  default     = ""
  description = "karmada-controller-manager's --failover-eviction-timeout, how long a not-ready member keeps its workloads; \"\" keeps Karmada's default (5m)."
}

variable "karmada_agent_feature_gates" {
  type        = string
  default     = ""
  description = "karmada-agent's --feature-gates in the pull members; \"\" keeps karmadactl register's. vars/karmada-e2e.hcl has upstream's e2e value (MultiClusterService for EndpointSlice collection)."
}

locals {
  karmada_controller_manager_args = concat(
    var.karmada_feature_gates == "" ? [] : ["--feature-gates=${var.karmada_feature_gates}"],
    var.karmada_controllers == "" ? [] : ["--controllers=${var.karmada_controllers}"],
    var.karmada_failover_eviction_timeout == "" ? [] : ["--failover-eviction-timeout=${var.karmada_failover_eviction_timeout}"],
  )
  push_members = sort(setsubtract(keys(var.members), var.pull_members))
  bridge       = "10.1.0.1" # each cluster's cni0, in its own network namespace
  # etcd's hostPath in the host cluster is this machine's directory too (a disk device at
  # the same path), so a half-done init's etcd data can be removed from here.
  karmada_etcd = "${local.config_dir}/karmada-etcd"
}

task "exec" "karmada_etcd_dir" {
  description = "Create the directory etcd's data lives in, shared with the host cluster's container."
  command     = ["mkdir", "-p", local.karmada_etcd]
  depends_on  = [exec.config_dir]
}

task "lxd_profile" "karmada_host" {
  remote              = var.lxd_remote
  name                = "flow-karmada-host"
  profile_description = "flow Kubernetes lab host cluster: Karmada's etcd data on the host"
  devices = {
    karmada-etcd = { type = "disk", source = local.karmada_etcd, path = local.karmada_etcd }
  }
  depends_on = [exec.karmada_etcd_dir, preflight.lab]
}

task "proxy_device" "karmada_api" {
  description = "This machine's 127.0.0.1:32443 (the host cluster's address) to the Karmada API server's NodePort in the host cluster."
  remote      = local.remote_of[var.host_cluster]
  instance    = lxd_launch.member[var.host_cluster].name
  name        = "karmada-api"
  listen      = "tcp:${local.karmada_address}:${var.karmada_port}"
  connect     = "tcp:${local.bridge}:${var.karmada_port}"
  depends_on  = [lxd_exec.member_up[var.host_cluster]]
}

task "proxy_device" "to_member" {
  for_each    = var.members
  description = "A member's API server for Karmada, at the member's one endpoint: ADDRESS:PORT on the host cluster node (any of its addresses) to the same on this machine."
  remote      = local.remote_of[var.host_cluster]
  instance    = lxd_launch.member[var.host_cluster].name
  name        = "to-${each.key}"
  bind        = "instance"
  listen      = "tcp:0.0.0.0:${each.value}"
  connect     = "tcp:${local.address_of[each.key]}:${each.value}"
}

task "proxy_device" "to_karmada" {
  for_each    = toset(var.pull_members)
  description = "Karmada's API server for karmada-agent: 10.1.0.1:KARMADA_PORT in the member to this machine's forwarded port."
  remote      = local.remote_of[each.key]
  instance    = lxd_launch.member[each.key].name
  name        = "to-karmada"
  bind        = "instance"
  listen      = "tcp:0.0.0.0:${var.karmada_port}"
  connect     = "tcp:${local.karmada_address}:${var.karmada_port}"
}

module "karmada" {
  source             = "../modules/karmada"
  karmadactl         = exec.karmada_bin["karmadactl"].stdout
  karmadactl_version = var.karmada_version
  host_kubeconfig    = kubeconfig.member[var.host_cluster].path
  karmada_data       = "${local.config_dir}/karmada"
  etcd_data          = local.karmada_etcd
  registry           = "localhost:${var.registry_port}"
  kube_image_tag     = var.kube_version
  crds               = exec.karmada_bin["karmada-crds"].stdout
  advertise_address  = local.karmada_address
  cert_external_ip   = [local.bridge]
  internet_ip_lookup = false
  # The components that dial members, on the node's network: see the top of this file.
  host_network            = ["karmada-controller-manager", "karmada-aggregated-apiserver"]
  controller_manager_args = local.karmada_controller_manager_args
  agent_args              = var.karmada_agent_feature_gates == "" ? [] : ["--feature-gates=${var.karmada_agent_feature_gates}"]
  push_members            = local.push_members
  pull_members            = var.pull_members
  kubeconfigs             = { for m, k in kubeconfig.member : m => k.path if m != var.host_cluster }
  agent_api_endpoint      = "${local.bridge}:${var.karmada_port}"
  nginx_clusters          = sort(keys(var.members))
  nginx_image             = "localhost:${var.registry_port}/nginx:${var.image_nginx_tag}"
  depends_on              = [image_mirror.lab, wait_ready.member_dns, proxy_device.karmada_api, proxy_device.to_member, proxy_device.to_karmada]
}

# Printed last (outputs go by name): how to reach each cluster, the web Services and Karmada.
output "try" {
  description = "Commands to reach the lab: kubectl (Debian's kubernetes-client, installed by the lab) per cluster, curl per web Service, Karmada's clusters."
  value = concat(
    [for m, k in kubeconfig.member : "kubectl --kubeconfig ${k.path} get nodes,pods -A"],
    [for m, w in wait_ready.web_http : "curl http://${proxy_device.web[m].address}/"],
    ["kubectl --kubeconfig ${module.karmada.kubeconfig} get clusters"],
  )
}

output "karmada_kubeconfig" {
  description = "The Karmada API server's kubeconfig, written by karmadactl init."
  value       = module.karmada.kubeconfig
}

output "karmada_clusters" {
  value = module.karmada.clusters
}

output "karmada_nginx" {
  value = module.karmada.nginx
}
