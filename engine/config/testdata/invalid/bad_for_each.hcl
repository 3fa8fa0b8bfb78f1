# for_each needs a map or a set of strings known before the run.

variable "list" {
  default = ["a", "b"]
}

task "exec" "list" {
  for_each = ["a", "b"] # ERROR: Invalid for_each # ERROR: a list can be converted with toset()
  command  = ["true"]
}

task "exec" "null" {
  for_each = null # ERROR: for_each is null
  command  = ["true"]
}

task "exec" "number" {
  for_each = 3 # ERROR: for_each needs a map or a set of strings, not number
  command  = ["true"]
}
