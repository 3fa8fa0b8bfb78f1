# Runs the command it is given, whatever its type: a wrong one fails in the task.

variable "command" {
  type = any
}

task "exec" "run" {
  command = var.command # ERROR: Inappropriate value for attribute "command"
}
