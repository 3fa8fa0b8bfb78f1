# One task, one instance: every count the commands print about it is singular.

task "exec" "only" {
  command = ["echo", "alone"]
}
