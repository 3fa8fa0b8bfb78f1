# Number keys that do not exist, reported as the string keys they stand for.

task "exec" "shard" {
  for_each = { "1" = "a", "2" = "b" }
  command  = ["echo", each.value]
}

task "exec" "b" {
  command    = ["echo", exec.shard[3].stdout] # ERROR: exec.shard has no instance "3" (seen from exec.b); its keys are "1", "2".
  depends_on = [exec.shard[false]]            # ERROR: exec.shard has no instance "false"
}
