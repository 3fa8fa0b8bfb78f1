task "exec" "a" {
  command = ["echo"
