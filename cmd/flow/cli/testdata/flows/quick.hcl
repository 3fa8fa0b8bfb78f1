# Quick exec tasks: a fan-out over members, a join, and a task that prints a secret.

variable "members" {
  type    = set(string)
  default = ["m1", "m2"]
}

variable "token" {
  type      = string
  sensitive = true
  default   = "hunter2-secret"
}

task "exec" "prepare" {
  description = "Prepare the members' shared settings."
  command = ["echo", "preparing"]
}

task "exec" "launch" {
  for_each   = var.members
  depends_on = [exec.prepare]
  script     = "echo launching ${each.key}"
}

task "exec" "configure" {
  for_each = var.members
  command  = ["echo", "configured", exec.launch[each.key].stdout]
}

task "exec" "join" {
  script = "echo joined ${join(",", [for k, v in exec.configure : k])}"
}

task "exec" "secret" {
  script = "echo token is ${var.token}"
}

output "joined" {
  value = exec.join.stdout
}

output "members" {
  value = length(var.members)
}

output "token" {
  value     = var.token
  sensitive = true
}
