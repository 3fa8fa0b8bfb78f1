# A module per member: each member's chain runs under module.member["KEY"].

variable "members" {
  type    = set(string)
  default = ["m1", "m2"]
}

task "exec" "registry" {
  command = ["echo", "registry up"]
}

module "member" {
  source   = "./modules/member"
  for_each = var.members
  name     = each.key
  registry = exec.registry.stdout
}

task "exec" "join" {
  script = "echo joined ${join(",", [for k, m in module.member : m.config])}"
}

output "m1" {
  value = module.member["m1"].config
}
