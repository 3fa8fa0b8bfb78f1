# for_each over a map, an object, a set variable and toset(); depends_on with
# each.key; a whole for_each task read with a for expression.

variable "members" {
  type    = set(string)
  default = ["m1", "m2"]
}

locals {
  sizes = {
    m1 = { cpus = 2, disk = "10G" }
    m2 = { cpus = 4, disk = "20G" }
  }
}

task "exec" "create" {
  for_each = local.sizes
  command  = ["echo", each.key, tostring(each.value.cpus), each.value.disk]
}

task "exec" "labels" {
  for_each = { m1 = "blue", m2 = "green" }
  script   = "echo ${each.key}=${each.value}"
}

task "exec" "start" {
  for_each   = var.members
  depends_on = [exec.create[each.key], exec.labels[each.key]]
  command    = ["echo", "start", each.value]
}

task "exec" "check" {
  for_each = toset(["m1", "m2"])
  command  = ["echo", exec.start[each.key].stdout, exec.labels["m1"].stdout]
}

task "exec" "report" {
  script = join("; ", [for k, v in exec.check : "${k}: ${v.stdout}"])
}

task "exec" "splat" {
  command    = concat(["echo"], [for k in sort(keys(exec.create)) : k])
  depends_on = [exec.create]
}

output "report" {
  value = exec.report.stdout
}

output "checks" {
  value = { for k, v in exec.check : k => v.exit_code }
}
