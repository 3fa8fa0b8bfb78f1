# each exists only inside a task with for_each.

locals {
  key = each.key # ERROR: each outside for_each
}

task "exec" "a" {
  command = ["echo", each.value] # ERROR: each outside for_each
  timeout = "${each.key}s"       # ERROR: each outside for_each
}

task "exec" "b" {
  for_each = toset(["x"])
  command  = ["echo", each.key, each.index] # ERROR: Invalid each attribute
}

output "k" {
  value = each.key # ERROR: each outside for_each
}
