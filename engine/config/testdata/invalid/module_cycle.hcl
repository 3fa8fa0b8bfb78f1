# A module input that reads the module's own output, through no task: a cycle of values.
# MODULE-FILE: modules/passthrough/passthrough.hcl

module "loop" {
  source = "../modules/passthrough"
  x      = module.loop.o
}

output "r" {
  value = module.loop.o
}
