# A member chain: launch, configure, and a nested module that echoes the result.

variable "name" {
  type = string
}

variable "upstream" {
  type        = string
  default     = "none"
  description = "Set from a task's output by the caller: a dynamic input."
}

variable "port" {
  type    = number
  default = 1
}

locals {
  greeting = "hello ${var.name} from ${var.upstream}"
}

task "exec" "launch" {
  command = ["echo", local.greeting]
}

task "exec" "configure" {
  command = ["echo", exec.launch.stdout, tostring(var.port)]
}

module "inner" {
  source = "../leaf"
  text   = exec.configure.stdout
}

output "stdout" {
  value = exec.configure.stdout
}

output "inner" {
  value = module.inner.echo
}

output "name" {
  value = var.name
}
