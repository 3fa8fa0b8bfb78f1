# A task that fails after reading a sensitive variable, for the resume hint.

variable "token" {
  type      = string
  sensitive = true
}

variable "region" {
  type    = string
  default = "lab"
}

task "exec" "login" {
  script = "echo logging in to ${var.region} with ${var.token}; exit 1"
}
