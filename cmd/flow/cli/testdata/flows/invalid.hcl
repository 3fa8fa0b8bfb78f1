variable "members" {
  type    = set(string)
  default = ["m1"]
}

task "exce" "build" {
  command = ["make"]
}

task "exec" "test" {
  command = ["echo", exec.build.stdout, var.member]
}
