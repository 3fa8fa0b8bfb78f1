# Locals that build on each other across blocks, in any order, feeding for_each.

locals {
  fqdns = { for m in local.members : m => "${m}.${local.domain}" }
}

variable "env" {
  default = "staging"
}

locals {
  members = [for i in range(local.count) : format("m%d", i + 1)]
  domain  = "${var.env}.${local.base}"
}

locals {
  base  = "example.org"
  count = 3
}

task "exec" "ping" {
  for_each = local.fqdns
  command  = ["echo", each.value]
}
