# pull-mode.hcl — the seed's Pull-mode member: one more MicroK8s-in-LXD member, made by
# flows/modules/microk8s-member like flows/lab.hcl's, that is never joined in push mode. Instead `karmadactl register` installs
# karmada-agent in it: the agent creates the member's Cluster object and pulls its work from
# Karmada, so Karmada never needs to reach the member's API server. Needs flows/lab.hcl to
# have run (the microk8s profile, the Karmada control plane, karmadactl).
#
#   sudo flow run flows/pull-mode.hcl --state .flow/pull-mode.db
#   sudo flow resume --state .flow/pull-mode.db   # a resume creates a new token (never stored)
#   docs/flows/pull-mode.md              # variables, re-runs, removal

variable "member" {
  type        = string
  default     = "member4"
  description = "The pull-mode member: container name and its name in Karmada. Not one of flows/lab.hcl's push-mode members."
}

variable "host_port" {
  type        = number
  default     = 16445
  description = "Host port (127.0.0.1) forwarded to the member's API server (16443 inside)."
}

variable "karmada_version" {
  type    = string
  default = "v1.13.0"
}

variable "karmadactl_path" {
  type        = string
  default     = "/usr/local/bin/karmadactl"
  description = "karmadactl, as installed by flows/lab.hcl."
}

# The member's containerd cannot reach the host's localhost:32000 registry (its localhost
# is its own), so the agent comes from docker.io, like every other image a member runs.
variable "agent_image" {
  type        = string
  default     = "docker.io/karmada/karmada-agent:v1.13.0"
  description = "karmada-agent image, pulled by the member."
}

variable "microk8s_channel" {
  type    = string
  default = "1.31/stable"
}

variable "ubuntu_image" {
  type    = string
  default = "ubuntu:22.04"
}

variable "lxd_profile" {
  type        = string
  default     = "microk8s"
  description = "The MicroK8s-in-LXD profile flows/lab.hcl created."
}

variable "token_ttl" {
  type        = string
  default     = "1h"
  description = "Lifetime of the bootstrap token; register uses it within seconds."
}

variable "karmada_data" {
  type        = string
  default     = "/etc/karmada"
  description = "karmadactl init's data directory (flows/lab.hcl's karmada_data)."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where the member's kubeconfig is written, as MEMBER.config."
}

locals {
  karmada_kubeconfig = "${var.karmada_data}/karmada-apiserver.config"
}

# --- the member, made by the module flows/lab.hcl's members share ---------------------------

module "member" {
  source           = "./modules/microk8s-member"
  name             = var.member
  host_port        = var.host_port
  image            = var.ubuntu_image
  profiles         = ["default", var.lxd_profile]
  microk8s_channel = var.microk8s_channel
  config_dir       = var.config_dir
}

# --- register it in pull mode ----------------------------------------------------------------

# The token, CA hash and endpoint are sensitive outputs: never printed or stored.
task "karmadactl_token" "register" {
  karmadactl         = var.karmadactl_path
  karmadactl_version = var.karmada_version
  kubeconfig         = local.karmada_kubeconfig
  ttl                = var.token_ttl
  token_description  = "flow pull-mode registration of ${var.member}"
}

# The agent in the member dials api_endpoint (the Karmada API server's NodePort on the
# host's address): pull mode needs the member to reach Karmada, not the other way round.
task "karmadactl_register" "member" {
  karmadactl          = var.karmadactl_path
  karmadactl_version  = var.karmada_version
  api_endpoint        = karmadactl_token.register.api_endpoint
  token               = karmadactl_token.register.token
  ca_cert_hash        = karmadactl_token.register.ca_cert_hash
  cluster_name        = var.member
  kubeconfig          = module.member.kubeconfig # once the member's node is Ready
  karmada_agent_image = var.agent_image
  karmada_kubeconfig  = local.karmada_kubeconfig # flow destroy's karmadactl unregister
  timeout             = "10m"
}

# Ready=True is set by the agent itself: the proof that the member reaches Karmada.
task "wait_ready" "cluster" {
  kind         = "karmada_clusters"
  kubeconfig   = local.karmada_kubeconfig
  clusters     = [var.member]
  interval     = "2s"
  wait_timeout = "5m"
  depends_on   = [karmadactl_register.member]
}

output "kubeconfig" {
  value = module.member.kubeconfig
}

output "cluster" {
  value = wait_ready.cluster.clusters[0]
}
