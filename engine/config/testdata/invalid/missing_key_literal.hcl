# Instance keys that do not exist; found when the plan expands for_each.

task "exec" "a" {
  for_each = toset(["x", "y"])
  command  = ["echo", each.key]
}

task "exec" "b" {
  command = ["echo", exec.a["nope"].stdout] # ERROR: No such instance # ERROR: exec.a has no instance "nope" (seen from exec.b); its keys are "x", "y".
}

task "exec" "c" {
  for_each   = toset(["x", "z"])
  command    = ["true"]
  depends_on = [exec.a[each.key]] # ERROR: exec.a has no instance "z" (seen from exec.c["z"])
}
