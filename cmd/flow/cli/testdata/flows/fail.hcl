# build fails (twice: it retries once); test and deploy wait for it and are skipped.

task "exec" "docs" {
  command = ["echo", "docs written"]
}

task "exec" "fetch" {
  command = ["echo", "fetched"]
}

task "exec" "build" {
  depends_on = [exec.fetch]
  script     = "echo 'error: missing semicolon' >&2; exit 3"
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
