# Invalid module calls, inputs and references, all in one pass.
# MODULE-FILE: modules/broken/broken.hcl

module "unknown_input" {
  source = "../modules/leaf"
  text   = "x"
  txt    = "y" # ERROR: Unsupported module input # ERROR: Did you mean "text"?
}

module "missing_input" { # ERROR: Missing module input # ERROR: requires variable "text"
  source = "../modules/leaf"
}

module "no_dir" {
  source = "../modules/nope" # ERROR: Cannot read module
}

module "bad_source" {
  source = "modules/leaf" # ERROR: must start with ./ or ../
}

module "each_call" {
  source   = "../modules/leaf"
  for_each = toset(["a"])
  text     = each.key
}

module "broken" {
  source = "../modules/broken"
  text   = "t"
}

module "unknown_input" { # ERROR: Duplicate module call
  source = "../modules/leaf"
  text   = "x"
}

task "exec" "reads" {
  command = [
    module.nothing.x,          # ERROR: Reference to undeclared module
    module.unknown_input.nope, # ERROR: has no output "nope"
    module.each_call.echo,     # ERROR: Missing instance key
    module.broken["k"].echo,   # ERROR: Unexpected instance key
  ]
}
