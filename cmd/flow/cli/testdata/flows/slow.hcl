# Two tasks that run for a moment side by side and write a line first, for the live view.

task "exec" "left" {
  script = "echo warming up left; sleep 1; echo left done"
}

task "exec" "right" {
  script = "echo warming up right; sleep 1"
}

task "exec" "after" {
  command = ["echo", exec.left.stdout]
}
