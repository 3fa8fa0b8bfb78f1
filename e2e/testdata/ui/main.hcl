# ui/main.hcl — the flow of flow ui's browser test (e2e/ui_test.go): for_each tasks,
# a module called per member, a task that fails with output, one skipped after it, and
# exec.slow, which runs until the file var.gate exists, so the test decides when it
# succeeds. A secret variable is echoed by exec.secretive: the page must show it redacted.
# exec.prepare and exec.build have undo scripts, for the destroy run's page.

variable "gate" {
  type = string
}

variable "token" {
  type      = string
  sensitive = true
  default   = "s3cr3t-t0ken-value"
}

task "exec" "prepare" {
  script = "echo preparing; sleep 0.2"
  undo   = "echo unpreparing"
}

task "exec" "build" {
  for_each   = toset(["a", "b", "c"])
  depends_on = [exec.prepare]
  script     = "echo building ${each.key}; sleep 0.3"
  undo       = "echo undoing ${each.key}; sleep 0.2"
}

task "exec" "broken" {
  depends_on = [exec.prepare]
  script     = "echo 'broken: the widget is missing' >&2; exit 3"
}

task "exec" "after_broken" {
  depends_on = [exec.broken]
  script     = "echo never"
}

task "exec" "secretive" {
  depends_on = [exec.prepare]
  script     = "echo token is ${var.token}"
}

module "member" {
  source     = "./member"
  for_each   = toset(["m1", "m2"])
  name       = each.key
  depends_on = [exec.build]
}

task "exec" "slow" {
  depends_on = [module.member]
  script     = "echo waiting for the gate; while [ ! -e '${var.gate}' ]; do sleep 0.1; done; echo gate open"
}
