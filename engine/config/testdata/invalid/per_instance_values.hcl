# An instance whose values differ from its siblings' is checked on its own: the bad
# one is the second instance, of a task and of a module call alike.
# MODULE-FILE: modules/command/command.hcl

task "exec" "each" {
  for_each = { a = ["true"], b = "not a list" }
  command  = each.value # ERROR: Inappropriate value for attribute "command"
}

module "calls" {
  source   = "../modules/command"
  for_each = { a = ["true"], b = "not a list" }
  command  = each.value
}
