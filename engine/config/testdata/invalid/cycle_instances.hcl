# Cycles between instances: within one task, and per member across two tasks.

task "exec" "self" { # ERROR: exec.self["x"] -> exec.self["y"] -> exec.self["x"].
  for_each   = { x = "y", y = "x" }
  depends_on = [exec.self[each.value]]
  command    = ["true"]
}

task "exec" "ping" { # ERROR: exec.ping["m1"] -> exec.pong["m1"] -> exec.ping["m1"]. # ERROR: exec.ping["m2"] -> exec.pong["m2"] -> exec.ping["m2"].
  for_each = toset(["m1", "m2"])
  command  = ["echo", exec.pong[each.key].stdout]
}

task "exec" "pong" {
  for_each   = toset(["m1", "m2"])
  command    = ["true"]
  depends_on = [exec.ping[each.key]]
}

task "exec" "fine" {
  for_each   = toset(["m1", "m2"])
  command    = ["true"]
  depends_on = [exec.ping[each.key]]
}
