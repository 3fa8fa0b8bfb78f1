# fail.hcl with build fixed: what "flow resume" picks up.

task "exec" "docs" {
  command = ["echo", "docs written"]
}

task "exec" "fetch" {
  command = ["echo", "fetched"]
}

task "exec" "build" {
  depends_on = [exec.fetch]
  script     = "echo compiling; echo built"
  retry {
    attempts  = 2
    delay     = "10ms"
    max_delay = "10ms"
  }
}

task "exec" "test" {
  command = ["echo", "testing", exec.build.stdout]
}

task "exec" "deploy" {
  depends_on = [exec.test]
  command    = ["echo", "deployed"]
}
