# Attributes and blocks a task type does not have, reported by HCL itself, and in the
# same pass what the task then lacks.

task "exec" "a" { # ERROR: exec.a: command: one of command or script is required
  comand = ["true"] # ERROR: Unsupported argument # ERROR: Did you mean "command"?
  retri { # ERROR: Unsupported block type
    attempts = 2
  }
}

task "exec" "b" {
  command = ["true"]
  comand  = ["true"] # ERROR: An argument named "comand" is not expected here.
}

task "needs" "n" {
  target  = "x"
  targets = "y" # ERROR: An argument named "targets" is not expected here
}
