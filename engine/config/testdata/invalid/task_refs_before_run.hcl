# for_each and locals are evaluated before any task runs, so they cannot read tasks.

task "exec" "src" {
  command = ["echo", "a b"]
}

locals {
  from_task = exec.src.stdout # ERROR: Task reference in a local value # ERROR: cannot read exec.src
}

task "exec" "fe" {
  for_each = toset(split(" ", exec.src.stdout)) # ERROR: Task reference in for_each # ERROR: may use variables and locals but not exec.src
  command  = ["echo", each.key]
}
