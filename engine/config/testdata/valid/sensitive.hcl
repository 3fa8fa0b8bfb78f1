variable "token" {
  type      = string
  sensitive = true
  default   = "s3cr3t-token"
}

variable "pins" {
  type      = list(number)
  sensitive = true
  default   = [12345, 7]
}

variable "public" {
  default = "not-a-secret"
}

locals {
  header = "Bearer ${var.token}"
}

task "exec" "call" {
  command = ["curl", "-H", local.header, var.public]
}
