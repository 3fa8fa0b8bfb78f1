task "exec" "w" {
  for_each = toset(flatten([for a in range(40) : [for b in range(50) : "${a}-${b}"]]))
  command  = ["true"]
}
