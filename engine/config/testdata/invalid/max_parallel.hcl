# max_parallel is a constant count of at least 1.

task "exec" "zero" {
  for_each     = toset(["a", "b"])
  command      = ["true"]
  max_parallel = 0 # ERROR: Invalid max_parallel
}

task "exec" "text" {
  command      = ["true"]
  max_parallel = "two" # ERROR: Unsuitable value type
}
