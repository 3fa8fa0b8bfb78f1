# modules/karmada-join — joins one member cluster to Karmada in push mode: writes the
# kubeconfig Karmada's controllers reach the member with (its API server at the container's
# lxdbr0 address, which pods in the host cluster can reach), then `karmadactl join`.
# Called once per member, next to modules/microk8s-member:
#
#   module "join" {
#     source             = "./modules/karmada-join"
#     for_each           = var.members
#     cluster            = each.key
#     admin_config       = module.member[each.key].admin_config
#     address            = module.member[each.key].address
#     karmada_kubeconfig = karmadactl_init.karmada.kubeconfig
#     depends_on         = [module.member[each.key]]   # its node is Ready
#   }
#
# Output: cluster, once joined.

variable "cluster" {
  type        = string
  description = "The member's name, as a Karmada Cluster."
}

variable "admin_config" {
  type        = string
  sensitive   = true
  description = "The member's admin kubeconfig (`microk8s config`)."
}

variable "address" {
  type        = string
  description = "Address of the member's API server that Karmada's pods can reach."
}

variable "api_port" {
  type        = number
  default     = 16443
  description = "The member's API server port at address."
}

variable "karmada_kubeconfig" {
  type        = string
  description = "Kubeconfig of the Karmada API server."
}

variable "karmadactl" {
  type        = string
  default     = "/usr/local/bin/karmadactl"
  description = "karmadactl to run."
}

variable "karmadactl_version" {
  type        = string
  default     = "v1.13.0"
  description = "The version karmadactl must report."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "The join kubeconfig is written to CONFIG_DIR/.flow-lab/CLUSTER.join.config."
}

# join records the kubeconfig's server as the Cluster's apiEndpoint, and
# karmada-controller-manager, a pod in the host cluster, would reach its own loopback at
# 127.0.0.1:PORT: the member's container address is reachable and in its certificate.
task "kubeconfig" "join" {
  content      = var.admin_config
  server       = "https://${var.address}:${var.api_port}"
  cluster_name = var.cluster
  context_name = var.cluster
  user_name    = var.cluster
  path         = "${var.config_dir}/.flow-lab/${var.cluster}.join.config"
}

task "karmadactl_join" "this" {
  karmadactl         = var.karmadactl
  karmadactl_version = var.karmadactl_version
  cluster            = var.cluster
  kubeconfig         = var.karmada_kubeconfig
  cluster_kubeconfig = kubeconfig.join.path
  timeout            = "5m"
  retry {
    attempts = 3
    delay    = "10s"
  }
}

output "cluster" {
  value = karmadactl_join.this.cluster
}
