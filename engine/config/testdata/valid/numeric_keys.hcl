# A literal number or bool as an instance key means that key as a string, as it does
# when indexing an object; this used to crash the planner.

task "exec" "shard" {
  for_each = { "1" = "a", "2" = "b", "true" = "c" }
  command  = ["echo", each.value]
}

task "exec" "first" {
  command    = ["echo", exec.shard[1].stdout]
  depends_on = [exec.shard[true]]
}
