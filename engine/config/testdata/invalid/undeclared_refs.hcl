# References to things that are not declared, all in one pass.

variable "greeting" {
  default = "hi"
}

locals {
  name = "world"
}

task "exec" "plain" {
  command = ["echo", var.greting] # ERROR: Reference to undeclared variable # ERROR: Did you mean "greeting"?
}

task "exec" "fe" {
  for_each = toset(["a", "b"])
  command  = ["echo", local.nam, each.key] # ERROR: Reference to undeclared local value # ERROR: Did you mean "name"?
}

task "exec" "refs" {
  command = [
    exec.missing.stdout,    # ERROR: Reference to undeclared task
    exec.plain.stdot,       # ERROR: Unsupported attribute # ERROR: has no attribute or output "stdot". Did you mean "stdout"?
    exec.plain.command[0],
    exec.fe["a"].stdout,
    exec.fe.stdout,         # ERROR: Missing instance key # ERROR: refer to one instance as exec.fe[KEY].stdout
    exec.plain["x"].stdout, # ERROR: Unexpected instance key
    each.key,               # ERROR: each outside for_each
    path.flow,
    path.home,              # ERROR: Invalid path attribute
    exce.plain.stdout,      # ERROR: Unknown reference # ERROR: Did you mean "exec"?
  ]
  depends_on = [exec.nope] # ERROR: Reference to undeclared task
}

output "o" {
  value = exec.gone.stdout # ERROR: Reference to undeclared task
}

output "p" {
  value = var.nothing # ERROR: Reference to undeclared variable
}
