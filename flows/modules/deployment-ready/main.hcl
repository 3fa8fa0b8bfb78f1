# modules/deployment-ready — waits until a Deployment is available in each of the given
# members, through the kubeconfig flows/lab.hcl wrote for each (CONFIG_DIR/MEMBER.config):
# the member's own Deployment controller reports every replica available. One wait per
# member, addressed module.NAME.wait_ready.deployment["MEMBER"].
#
#   module "ready" {
#     source     = "./modules/deployment-ready"
#     members    = var.members
#     name       = "nginx"
#     depends_on = [k8s_apply.nginx]
#   }

variable "members" {
  type        = set(string)
  description = "Members to wait in."
}

variable "name" {
  type        = string
  description = "Name of the Deployment."
}

variable "namespace" {
  type    = string
  default = "default"
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where the members' kubeconfigs are, as MEMBER.config."
}

variable "wait_timeout" {
  type    = string
  default = "5m"
}

task "wait_ready" "deployment" {
  for_each     = var.members
  kind         = "deployment"
  kubeconfig   = "${var.config_dir}/${each.key}.config"
  namespace    = var.namespace
  name         = var.name
  interval     = "2s"
  wait_timeout = var.wait_timeout
}

output "members" {
  description = "The members the Deployment is available in, sorted."
  value       = sort(keys(wait_ready.deployment))
}
