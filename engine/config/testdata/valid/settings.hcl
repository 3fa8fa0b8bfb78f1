# Shared settings: description, timeout, retry, depends_on on a whole task, and
# settings computed from variables and each.

variable "attempts" {
  type    = number
  default = 3
}

task "exec" "first" {
  description = "The first step."
  command     = ["true"]
  timeout     = "90s"
  retry {
    attempts  = var.attempts
    delay     = "1s"
    max_delay = "1m"
  }
}

task "exec" "each" {
  for_each   = { fast = "5s", slow = "2m" }
  depends_on = [exec.first]
  command    = ["echo", each.key]
  timeout    = each.value
  retry {
    attempts = each.key == "slow" ? 2 : 1
  }
}

task "needs" "typed" {
  target = exec.first.stdout
  count  = exec.first.exit_code
}

output "typed" {
  value     = needs.typed.result
  sensitive = true
}
