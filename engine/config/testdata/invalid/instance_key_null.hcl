# A null literal is no instance key.

task "exec" "shard" {
  for_each = { "1" = "a" }
  command  = ["echo", each.value]
}

task "exec" "b" {
  command = ["echo", exec.shard[null].stdout] # ERROR: Invalid instance key
}
