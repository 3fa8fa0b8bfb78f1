task "exec" "w" {
  for_each = toset([for i in range(1) : tostring(i)])
  command  = ["true"]
}
