# pg_lab.hcl — the flow of the PostgreSQL e2e test (e2e/postgres_test.go), a stand-in
# for a shared lab: a network, six nodes on it and an app on each node. Every task
# appends one line to var.marks when it runs (so the test counts how often each
# instance ran), makes its object (a file under var.objects) and removes it on
# destroy.

variable "marks" {
  type = string
}

variable "objects" {
  type = string
}

variable "nap" {
  type    = number
  default = 0.4
}

locals {
  nodes = toset(["n1", "n2", "n3", "n4", "n5", "n6"])
}

task "exec" "net" {
  script = "echo net >> '${var.marks}'; mkdir -p '${var.objects}'; sleep ${var.nap}; touch '${var.objects}/net'; echo net"
  undo   = "echo 'undo net' >> '${var.marks}'; rm -f '${var.objects}/net'"
}

task "exec" "node" {
  for_each   = local.nodes
  depends_on = [exec.net]
  script     = "echo 'node ${each.key}' >> '${var.marks}'; sleep ${var.nap}; touch '${var.objects}/node-${each.key}'; echo ${each.key}"
  undo       = "echo 'undo node ${each.key}' >> '${var.marks}'; rm -f '${var.objects}/node-${each.key}'"
}

task "exec" "app" {
  for_each = local.nodes
  env      = { NODE = exec.node[each.key].stdout }
  script   = "echo 'app ${each.key}' >> '${var.marks}'; sleep ${var.nap}; touch \"${var.objects}/app-$NODE\"; echo app-$NODE"
  undo     = "echo 'undo app ${each.key}' >> '${var.marks}'; rm -f '${var.objects}/app-${each.key}'"
}
