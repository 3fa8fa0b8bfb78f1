# Passes its input through to its output.

variable "x" {
  type = string
}

task "exec" "a" {
  command = ["echo", "hi"]
}

output "o" { # ERROR: Cycle through a module # ERROR: output.o in module.loop depends on itself
  value = var.x
}
