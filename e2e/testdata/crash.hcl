# crash.hcl — the flow of the e2e crash test (e2e/crash_test.go).
#
# A root, one chain of four steps per member, and a join: 18 task instances. Every
# execution of a task appends one line "STEP MEMBER" (or "root", "join") to the file
# var.marks, then sleeps a bounded pseudo-random time derived from var.seed, so the
# test can count how often each instance really ran. Steps 2 and 4 depend on their
# predecessor through its output (an implicit dependency), steps 1 and 3 and the join
# through depends_on or a reference, so resume must restore recorded outputs exactly.

variable "marks" {
  type        = string
  description = "File every task execution appends one line to."
}

variable "members" {
  type        = map(number)
  default     = { m1 = 1, m2 = 2, m3 = 3, m4 = 4 }
  description = "Member names, each with a distinct number that varies its sleeps."
}

variable "seed" {
  type        = number
  default     = 0
  description = "Varies the sleeps between trials."
}

variable "min_ms" {
  type    = number
  default = 80
}

variable "span_ms" {
  type    = number
  default = 160
}

locals {
  # nap[member][step] is a sleep in seconds in [min_ms, min_ms+span_ms) milliseconds.
  nap = {
    for m, i in var.members : m => [
      for s in range(4) : format("%.3f", (var.min_ms + (var.seed * 37 + i * 101 + s * 53) % var.span_ms) / 1000)
    ]
  }
  edge_nap = format("%.3f", (var.min_ms + (var.seed * 13) % var.span_ms) / 1000)
}

task "exec" "root" {
  script = "echo root >> '${var.marks}'; sleep ${local.edge_nap}; echo root"
}

task "exec" "s1" {
  for_each   = var.members
  depends_on = [exec.root]
  script     = "echo 's1 ${each.key}' >> '${var.marks}'; sleep ${local.nap[each.key][0]}; echo s1-${each.key}"
}

task "exec" "s2" {
  for_each = var.members
  env      = { UP = exec.s1[each.key].stdout }
  script   = "echo 's2 ${each.key}' >> '${var.marks}'; sleep ${local.nap[each.key][1]}; echo \"$UP\"/s2"
}

task "exec" "s3" {
  for_each   = var.members
  depends_on = [exec.s2[each.key]]
  script     = "echo 's3 ${each.key}' >> '${var.marks}'; sleep ${local.nap[each.key][2]}; echo s3-${each.key}"
}

task "exec" "s4" {
  for_each = var.members
  script   = "echo 's4 ${each.key}' >> '${var.marks}'; sleep ${local.nap[each.key][3]}; echo '${exec.s3[each.key].stdout}/${exec.s2[each.key].stdout}/s4'"
}

task "exec" "join" {
  script = "echo join >> '${var.marks}'; sleep ${local.edge_nap}; echo joined ${join(",", sort([for m, t in exec.s4 : t.stdout]))}"
}

output "joined" {
  value = exec.join.stdout
}
