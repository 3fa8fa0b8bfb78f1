variable "x" {
  default = "a"
  type    = string
}

task "exec" "a" {
  command = ["echo", var.x]
  timeout = "5s"
}
