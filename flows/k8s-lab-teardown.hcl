# k8s-lab-teardown.hcl — removes everything flows/k8s-lab created: the member and registry
# containers (their proxy devices, pods and data go with them), the lab's profiles, and the
# members' credentials and kubeconfigs. The images (flow-member, flow-lab-busybox) and the
# build caches stay, so the next `make demo` starts in seconds. Absent objects are skipped,
# so it is safe to run at any point, any number of times.
#
#   flow run flows/k8s-lab-teardown.hcl --new

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Member containers to delete."
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
  instances = concat(sort(var.members), ["lab-registry", "lab-upstream"])
  profiles  = ["flow-member", "flow-lab-registry"]
  force     = true
}

task "exec" "config" {
  command    = ["rm", "-rf", local.config_dir]
  depends_on = [lxd_delete.lab]
}

output "deleted" {
  value = lxd_delete.lab.deleted
}
