# A task that waits for itself: a cycle of one instance, said in the singular.

task "exec" "me" { # ERROR: Dependency cycle # ERROR: This task depends on itself: exec.me -> exec.me.
  depends_on = [exec.me]
  command    = ["true"]
}
