# A for_each that reads an input set from a task's output cannot be expanded.

variable "names" {
  type = set(string)
}

variable "count" {
  type = number
}

task "exec" "each" {
  for_each = var.names # ERROR: Invalid for_each # ERROR: reads a module input that reads a task # ERROR: (in module.dynamic, called at testdata/invalid/module_values.hcl:14
  command  = ["echo", each.key]
}
