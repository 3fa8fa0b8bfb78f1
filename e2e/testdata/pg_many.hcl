# pg_many.hcl — the flow of the e2e tests of a PostgreSQL writer that loses its lock
# or its database (e2e/postgres_lease_test.go): var.n instances that wait for nothing,
# each appending one line to a file of its own under var.marks (named by its key) when
# it starts — the flow process's e2e tag and the time in nanoseconds — then sleeping
# var.nap seconds.

variable "marks" {
  type = string
}

variable "n" {
  type    = number
  default = 400
}

variable "nap" {
  type    = number
  default = 0.05
}

task "exec" "job" {
  for_each = toset([for i in range(var.n) : format("j%03d", i)])
  script   = "mkdir -p '${var.marks}'; echo \"$FLOW_E2E_TAG $(date +%s%N)\" >> '${var.marks}/${each.key}'; sleep ${var.nap}"
}
