task "exec" "hello" {
  command = ["echo", var.who, exec.later.stdout]
}
