# sleeper.hcl — the flow of the e2e tests of locking, live status and interrupts
# (e2e/live_test.go): a quick task, a task that prints a line and then sleeps
# var.nap seconds, and a task after it. Each execution appends its name to var.marks.
# With ignore_term the sleeper (and its sleep) ignore SIGTERM, so only SIGKILL stops it.

variable "marks" {
  type = string
}

variable "nap" {
  type    = number
  default = 30
}

variable "ignore_term" {
  type    = bool
  default = false
}

task "exec" "first" {
  script = "echo first >> '${var.marks}'; echo first done"
}

task "exec" "sleeper" {
  depends_on = [exec.first]
  script     = "${var.ignore_term ? "trap '' TERM; " : ""}echo sleeper >> '${var.marks}'; echo sleeping now; sleep ${var.nap}; echo woke up"
}

task "exec" "after" {
  depends_on = [exec.sleeper]
  script     = "echo after >> '${var.marks}'; echo after done"
}
