# modules/karmada — the Karmada phase both labs share: `karmadactl init` on the host
# cluster, the push members joined, the pull members registered (token, then karmada-agent
# on the member), every Cluster waited on until Ready, and nginx propagated by a
# PropagationPolicy to the members it names, waited on in each of them. flows/lab.hcl (a
# real Ubuntu server: MicroK8s from snap) and flows/k8s-lab (this machine: our member image)
# call it the same way; they differ only in how the clusters are provisioned and reached.
#
#   module "karmada" {
#     source          = "../modules/karmada"
#     karmadactl      = "/usr/local/bin/karmadactl"
#     host_kubeconfig = "/var/snap/microk8s/current/credentials/client.config"
#     karmada_data    = "/etc/karmada"
#     registry        = "localhost:32000"
#     kube_image_tag  = "v1.31.4"
#     push_members    = ["member1", "member2"]
#     pull_members    = ["member3"]
#     kubeconfigs     = { for m, k in kubeconfig.member : m => k.path }
#     depends_on      = [image_mirror.karmada]
#   }
#
# Outputs: kubeconfig (Karmada's), clusters, nginx (where it runs).

variable "karmadactl" {
  type        = string
  default     = "/usr/local/bin/karmadactl"
  description = "karmadactl to run."
}

variable "karmadactl_version" {
  type        = string
  default     = "v1.13.0"
  description = "The version karmadactl must report; also the tag of the Karmada images."
}

variable "host_kubeconfig" {
  type        = string
  description = "Kubeconfig of the host cluster Karmada's control plane is installed in."
}

variable "karmada_data" {
  type        = string
  default     = "/etc/karmada"
  description = "karmadactl init's data directory: certificates and karmada-apiserver.config."
}

variable "etcd_data" {
  type        = string
  default     = "/var/lib/karmada-etcd"
  description = "Path of etcd's data on the host cluster's node (hostPath), also on this machine: a half-done init's data is removed here."
}

variable "registry" {
  type        = string
  description = "Registry every Karmada image is pulled from (init's --private-image-registry, the agent's image)."
}

variable "kube_image_tag" {
  type        = string
  default     = "v1.31.4"
  description = "Tag of kube-apiserver and kube-controller-manager in registry."
}

variable "crds" {
  type        = string
  default     = ""
  description = "Karmada's CRDs tarball for an offline init; default the release's download URL."
}

variable "advertise_address" {
  type        = string
  default     = ""
  description = "Address in Karmada's kubeconfig and cluster-info; default the host cluster node's."
}

variable "cert_external_ip" {
  type        = list(string)
  default     = []
  description = "More addresses the Karmada API server's certificate must hold (how members reach it)."
}

variable "internet_ip_lookup" {
  type        = bool
  default     = true
  description = "Whether karmadactl init may ask the internet for this machine's public address (false offline)."
}

variable "controller_manager_args" {
  type        = list(string)
  default     = ["--feature-gates=Failover=true"]
  description = "Extra karmada-controller-manager arguments: the Failover feature gate, off by default in v1.13, which the failover drill's policy needs."
}

variable "agent_args" {
  type        = list(string)
  default     = []
  description = "Extra karmada-agent arguments in the pull members, such as its feature gates."
}

variable "host_network" {
  type        = list(string)
  default     = []
  description = "karmadactl init's Deployments whose pods use the host cluster node's network, to reach member API servers at addresses only the node serves."
}

variable "push_members" {
  type        = list(string)
  description = "Members joined in push mode (karmadactl join)."
}

variable "pull_members" {
  type        = list(string)
  default     = []
  description = "Members registered in pull mode (karmadactl token + register: karmada-agent runs in them)."
}

variable "kubeconfigs" {
  type        = map(string)
  description = "Each member's kubeconfig on this machine, by member name."
}

variable "api_endpoints" {
  type        = map(string)
  default     = {}
  description = "A member's API server as Karmada reaches it (its Cluster's apiEndpoint: join's api_endpoint, register's cluster_api_endpoint), when it differs from its kubeconfig's server (port forwards)."
}

variable "agent_api_endpoint" {
  type        = string
  default     = ""
  description = "host:port of the Karmada API server as karmada-agent reaches it from inside a pull member, when it differs from the one init published."
}

variable "nginx_clusters" {
  type        = list(string)
  description = "Members nginx's PropagationPolicy names; nginx is waited on in each."
}

variable "nginx_image" {
  type        = string
  default     = "docker.io/library/nginx:1.27"
  description = "nginx image the members pull."
}

locals {
  clusters = sort(concat(var.push_members, var.pull_members))
  # karmadactl token and register run only when there are pull members.
  register = length(var.pull_members) > 0 ? toset(["pull"]) : toset([])
}

# init is counted done only when every component is Ready and the cluster API answers; a
# half-done one (a kill inside init) is removed with its etcd data and installed again.
task "karmadactl_init" "karmada" {
  karmadactl              = var.karmadactl
  karmadactl_version      = var.karmadactl_version
  kubeconfig              = var.host_kubeconfig
  karmada_data            = var.karmada_data
  karmada_pki             = "${var.karmada_data}/pki"
  etcd_data               = var.etcd_data
  crds                    = var.crds
  advertise_address       = var.advertise_address
  cert_external_ip        = var.cert_external_ip
  internet_ip_lookup      = var.internet_ip_lookup
  private_image_registry  = var.registry
  kube_image_tag          = var.kube_image_tag
  controller_manager_args = var.controller_manager_args
  host_network            = var.host_network
  wait_timeout            = "5m"
  timeout                 = "20m"
}

task "karmadactl_join" "push" {
  for_each           = toset(var.push_members)
  karmadactl         = var.karmadactl
  karmadactl_version = var.karmadactl_version
  cluster            = each.key
  kubeconfig         = karmadactl_init.karmada.kubeconfig
  cluster_kubeconfig = var.kubeconfigs[each.key]
  api_endpoint       = lookup(var.api_endpoints, each.key, "")
  timeout            = "5m"
  retry {
    attempts = 3
    delay    = "10s"
  }
}

# The token is sensitive: never stored, so a resumed run makes a new one.
task "karmadactl_token" "pull" {
  for_each           = local.register
  karmadactl         = var.karmadactl
  karmadactl_version = var.karmadactl_version
  kubeconfig         = karmadactl_init.karmada.kubeconfig
  ttl                = "1h"
  token_description  = "flow: registers ${join(", ", var.pull_members)}"
}

task "karmadactl_register" "pull" {
  for_each            = toset(var.pull_members)
  karmadactl          = var.karmadactl
  karmadactl_version  = var.karmadactl_version
  api_endpoint        = karmadactl_token.pull["pull"].api_endpoint
  token               = karmadactl_token.pull["pull"].token
  ca_cert_hash        = karmadactl_token.pull["pull"].ca_cert_hash
  cluster_name        = each.key
  kubeconfig          = var.kubeconfigs[each.key]
  karmada_agent_image = "${var.registry}/karmada-agent:${var.karmadactl_version}"
  agent_api_endpoint  = var.agent_api_endpoint
  cluster_api_endpoint = lookup(var.api_endpoints, each.key, "")
  agent_args           = var.agent_args
  karmada_kubeconfig  = karmadactl_init.karmada.kubeconfig # flow destroy's karmadactl unregister
  timeout             = "5m"
}

task "wait_ready" "clusters" {
  kind         = "karmada_clusters"
  kubeconfig   = karmadactl_init.karmada.kubeconfig
  clusters     = local.clusters
  interval     = "2s"
  wait_timeout = "5m"
  depends_on   = [karmadactl_join.push, karmadactl_register.pull]
}

task "k8s_apply" "nginx" {
  kubeconfig = karmadactl_init.karmada.kubeconfig
  content = templatefile("${path.flow}/../../lab/nginx-demo.yaml.tftpl", {
    name      = "nginx"
    namespace = "default"
    image     = var.nginx_image
    replicas  = 2
    clusters  = sort(var.nginx_clusters)
  })
  depends_on = [wait_ready.clusters]
}

task "wait_ready" "nginx" {
  for_each     = toset(var.nginx_clusters)
  kind         = "deployment"
  kubeconfig   = var.kubeconfigs[each.key]
  namespace    = "default"
  name         = "nginx"
  interval     = "2s"
  wait_timeout = "5m"
  depends_on   = [k8s_apply.nginx]
}

output "kubeconfig" {
  description = "The Karmada API server's kubeconfig, written by karmadactl init."
  value       = karmadactl_init.karmada.kubeconfig
}

output "clusters" {
  value = wait_ready.clusters.clusters
}

output "nginx" {
  description = "Members where Karmada's nginx runs, Available."
  value       = sort([for m, w in wait_ready.nginx : m])
}
