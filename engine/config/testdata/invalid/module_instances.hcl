# References to module instances that the call's for_each does not make.

module "keys" {
  source   = "../modules/leaf"
  for_each = toset(["a"])
  text     = each.key
}

task "exec" "reads" {
  command = [module.keys["b"].echo] # ERROR: No such instance # ERROR: module.keys has no instance "b"
}

task "exec" "each" {
  for_each = toset(["a", "c"])
  command  = [module.keys[each.key].echo] # ERROR: has no instance "c" (seen from exec.each["c"])
}
