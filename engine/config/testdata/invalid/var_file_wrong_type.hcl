# A var-file with a value of the wrong type and an undeclared name.

# VAR-FILE: vars/wrong_type.hcl

variable "replicas" {
  type    = number
  default = 1
}

variable "members" {
  type    = set(string)
  default = []
}

task "exec" "a" {
  for_each = var.members
  command  = ["echo", var.replicas]
}
