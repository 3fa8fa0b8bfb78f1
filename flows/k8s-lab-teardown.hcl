# k8s-lab-teardown.hcl — removes everything flows/k8s-lab created: the member and registry
# containers and the host cluster's (their proxy devices, pods and data go with them, and
# Karmada with the host cluster), the lab's profiles, and the config directory: credentials,
# kubeconfigs, Karmada's data and its etcd's. The images (flow-member, flow-lab-busybox) and the
# build caches stay, so the next `make demo` starts in seconds. Absent objects are skipped,
# so it is safe to run at any point, any number of times.
#
#   flow run flows/k8s-lab-teardown.hcl --new

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Member containers to delete."
}

variable "host_cluster" {
  type        = string
  default     = "karmada-host"
  description = "The host cluster's container (Karmada's control plane and its etcd go with it)."
}

variable "config_dir" {
  type        = string
  default     = ""
  description = "The lab's config_dir (default .lab/k8s-lab in the repository): kubeconfigs and credentials to remove."
}

locals {
  config_dir = var.config_dir != "" ? var.config_dir : "${dirname(path.flow)}/.lab/k8s-lab"
}

task "lxd_delete" "lab" {
  instances = concat(sort(var.members), [var.host_cluster, "lab-registry", "lab-upstream"])
  profiles  = ["flow-member", "flow-karmada-host", "flow-lab-registry"]
  force     = true
}

task "exec" "config" {
  command    = ["rm", "-rf", local.config_dir]
  depends_on = [lxd_delete.lab]
}

output "deleted" {
  value = lxd_delete.lab.deleted
}
