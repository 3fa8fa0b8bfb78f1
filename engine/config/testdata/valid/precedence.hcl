variable "level" {
  type    = string
  default = "default"
}

variable "replicas" {
  type    = number
  default = 1
}

variable "members" {
  type    = set(string)
  default = ["a"]
}

variable "untyped" {
  default = "d"
}

task "exec" "show" {
  for_each = var.members
  command  = ["echo", var.level, var.replicas, var.untyped, each.key]
}
