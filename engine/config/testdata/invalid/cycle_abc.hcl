# A three-task cycle declared in order: one diagnostic on the smallest task.

task "exec" "a" { # ERROR: Dependency cycle # ERROR: exec.a -> exec.b -> exec.c -> exec.a.
  command = ["echo", exec.b.stdout]
}

task "exec" "b" {
  command = ["echo", exec.c.stdout]
}

task "exec" "c" {
  command    = ["true"]
  depends_on = [exec.a]
}

task "exec" "outside" {
  command = ["echo", exec.a.stdout]
}
