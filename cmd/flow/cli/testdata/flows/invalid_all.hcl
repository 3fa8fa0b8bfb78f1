# Mistakes of every phase of loading in one file: flow validate reports them all.

variable "replicas" {
  type    = number
  default = "three"
}

task "exec" "typo" {
  comand  = ["true"]
  command = "not a list"
}

task "exec" "refs" {
  depends_on = [exec.nope]
  script     = "echo ${exec.nope.stdout} ${var.replica}"
  env        = 3
}

task "exec" "each" {
  for_each = 5
  command  = ["echo", each.key]
}

task "process" "p" {
  command  = ["sleep", var.replicas]
  pid_file = "p.pid"
  log_file = ["p.log"]
  recreate = "sometimes"
}
