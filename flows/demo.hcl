# demo.hcl — the shape of the lab, with exec tasks only: one host step, the same
# chain fanned out once per member, and a join. Members run in parallel; each
# member's chain waits only on its own upstream steps.
#
#   flow run flows/demo.hcl            # Ctrl-C it halfway, then:
#   flow resume                        # finishes without redoing what succeeded

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Names of the member clusters."
}

variable "step_seconds" {
  type        = number
  default     = 1
  description = "How long each simulated step takes."
}

locals {
  ports = { member1 = 16441, member2 = 16442, member3 = 16444 }
}

task "exec" "prepare_host" {
  description = "Stand-in for installing packages on the host."
  script      = "echo preparing host; sleep ${var.step_seconds}; echo host ready"
}

task "exec" "launch" {
  for_each   = var.members
  depends_on = [exec.prepare_host]
  script     = "echo launching ${each.key}; sleep ${var.step_seconds}"
}

task "exec" "install" {
  for_each = var.members
  script   = "echo installing microk8s in ${exec.launch[each.key].stdout}; sleep ${var.step_seconds}"
  retry {
    attempts = 2
    delay    = "1s"
  }
}

task "exec" "forward" {
  for_each   = var.members
  command    = ["echo", "forward 127.0.0.1:${lookup(local.ports, each.key, 16450)} -> ${each.key}:16443"]
  depends_on = [exec.install[each.key]]
}

task "exec" "kubeconfig" {
  for_each = var.members
  script   = "sleep ${var.step_seconds}; echo 'server: https://127.0.0.1:${lookup(local.ports, each.key, 16450)}'"
  env      = { FORWARD = exec.forward[each.key].stdout }
  timeout  = "1m"
}

task "exec" "join" {
  description = "Stand-in for karmadactl join of every member."
  script      = "echo joining ${join(", ", sort([for m, k in exec.kubeconfig : m]))}"
}

output "joined" {
  value = exec.join.stdout
}
