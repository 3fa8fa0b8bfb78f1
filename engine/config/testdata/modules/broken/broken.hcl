# A module with mistakes of its own: reported on its file, naming the call.

variable "text" {
  type = string
}

task "exec" "x" {
  command = ["echo", var.txt] # ERROR: Reference to undeclared variable # ERROR: (in module.broken, called at
}

task "nope" "y" { # ERROR: Unknown task type
}
