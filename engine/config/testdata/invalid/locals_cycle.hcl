# Local values that depend on each other.

locals {
  a = "${local.b}-a" # ERROR: Cycle in local values # ERROR: local.a -> local.b -> local.a
  b = "${local.a}-b"
  c = "c"
}

task "exec" "x" {
  command = ["echo", local.a, local.c]
}
