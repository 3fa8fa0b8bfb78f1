# Module inputs checked when planning: types, and for_each over a task's output.
# MODULE-FILE: modules/dynamic/dynamic.hcl

task "exec" "names" {
  command = ["echo", "a b"]
}

module "wrong_type" {
  source = "../modules/member"
  name   = "n"
  port   = "not a number" # ERROR: Invalid value for module input # ERROR: a number is required
}

module "dynamic" {
  source = "../modules/dynamic"
  names  = toset(split(" ", exec.names.stdout))
  count  = 1
}
