# Module calls: one per member with for_each, inputs from each and from a task, a
# nested module, and references to module outputs per instance.

variable "members" {
  type    = map(number)
  default = { m1 = 1, m2 = 2 }
}

task "exec" "registry" {
  command = ["echo", "registry"]
}

module "member" {
  source   = "../modules/member"
  for_each = var.members
  name     = each.key
  port     = each.value
  upstream = exec.registry.stdout
}

module "single" {
  source     = "../modules/leaf"
  text       = "static"
  depends_on = [exec.registry]
}

task "exec" "after" {
  for_each = var.members
  command  = ["echo", module.member[each.key].stdout]
}

task "exec" "last" {
  command    = ["echo", module.single.echo]
  depends_on = [module.member["m2"]]
}

output "names" {
  value = { for k, m in module.member : k => m.name }
}
