# Required variables without a value: each reported on its declaration.

variable "token" { # ERROR: Missing required variable # ERROR: set it with --var token=VALUE, --var-file, or FLOW_VAR_token.
  type      = string
  sensitive = true
}

variable "replicas" { # ERROR: Variable "replicas" has no default and no value
  type = number
}

variable "given" {
  type = string
}

variable "region" {
  default = "eu"
}

# VAR: given=yes

task "exec" "a" {
  command = ["echo", var.token, var.replicas, var.given, var.region]
}
