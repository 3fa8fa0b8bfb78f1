# The same cycle as cycle_abc.hcl declared in reverse: the same diagnostic.

task "exec" "outside" {
  command = ["echo", exec.a.stdout]
}

task "exec" "c" {
  command    = ["true"]
  depends_on = [exec.a]
}

task "exec" "b" {
  command = ["echo", exec.c.stdout]
}

task "exec" "a" { # ERROR: Dependency cycle # ERROR: These tasks depend on each other in a cycle: exec.a -> exec.b -> exec.c -> exec.a.
  command = ["echo", exec.b.stdout]
}
