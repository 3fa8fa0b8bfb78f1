# bench/jobs/jobs.hcl — what a step costs as a Kubernetes Job against the same command as
# exec (scripts/bench-jobs.sh): count steps across the lab's members, each running
# command once, as k8s_job (kind = "job") or as exec inside the member (kind = "exec").

variable "config_dir" { type = string }
variable "kind" { type = string }
variable "count" {
  type    = number
  default = 30
}
variable "members" {
  type    = list(string)
  default = ["member1", "member2", "member3"]
}
variable "command" {
  type    = list(string)
  default = ["sh", "-c", "echo step"]
}
variable "run" {
  type        = string
  default     = "bench"
  description = "A label value that makes each repetition's Jobs new ones."
}

locals {
  steps = { for i in range(var.count) : format("s%02d", i) => var.members[i % length(var.members)] }
}

task "k8s_job" "step" {
  for_each   = var.kind == "job" ? local.steps : {}
  kubeconfig = "${var.config_dir}/${each.value}.config"
  image      = "localhost:32000/debian:bookworm"
  command    = var.command
  labels     = { "bench" = var.run }
  resources  = { requests = { cpu = "1m", memory = "8Mi" } }
}

task "lxd_exec" "step" {
  for_each = var.kind == "exec" ? local.steps : {}
  instance = each.value
  command  = var.command
}
