# depends_on entries must name a task or one instance.

task "exec" "a" {
  command = ["true"]
}

task "exec" "b" {
  command    = ["true"]
  depends_on = [exec.a.stdout] # ERROR: Invalid depends_on entry
}

task "exec" "c" {
  command    = ["true"]
  depends_on = ["exec.a"] # ERROR: Invalid depends_on entry
}
