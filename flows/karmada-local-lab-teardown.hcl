# karmada-local-lab-teardown.hcl — removes everything flows/karmada-local-lab.hcl created:
# the Karmada host processes (stopped by their pid files; a pid whose command line changed is
# left alone), the member containers with their proxy devices, the lab profile, and the
# config directory with the kubeconfigs and the control plane's data. Absent objects are
# skipped, so it is safe to run at any point, any number of times.
#
#   flow run flows/karmada-local-lab-teardown.hcl --new

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Member containers to delete."
}

variable "config_dir" {
  type        = string
  default     = ""
  description = "The lab's config directory (as given to karmada-local-lab.hcl); default .lab/karmada in the repository."
}

locals {
  config_dir = var.config_dir != "" ? var.config_dir : "${dirname(path.flow)}/.lab/karmada"
}

task "process_stop" "scheduler" {
  pid_file = "${local.config_dir}/run/karmada-scheduler.pid"
}

task "process_stop" "controller_manager" {
  pid_file = "${local.config_dir}/run/karmada-controller-manager.pid"
}

task "process_stop" "webhook" {
  pid_file = "${local.config_dir}/run/karmada-webhook.pid"
}

task "process_stop" "apiserver" {
  pid_file   = "${local.config_dir}/run/karmada-apiserver.pid"
  depends_on = [process_stop.scheduler, process_stop.controller_manager, process_stop.webhook]
}

task "process_stop" "etcd" {
  pid_file   = "${local.config_dir}/run/etcd.pid"
  depends_on = [process_stop.apiserver]
}

task "lxd_delete" "members" {
  instances = sort(var.members)
  profiles  = ["flow-karmada-lab"]
  force     = true
}

task "exec" "config_dir" {
  description = "Remove the kubeconfigs, credentials and the control plane's data."
  command     = ["rm", "-rf", local.config_dir]
  depends_on  = [process_stop.etcd, lxd_delete.members]
}
