task "exec" "later" {
  command = ["echo", file("data.txt")]
}
