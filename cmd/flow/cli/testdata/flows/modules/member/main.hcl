variable "name" {
  type = string
}

variable "registry" {
  type = string
}

task "exec" "launch" {
  script = "echo launching ${var.name}"
}

task "exec" "configure" {
  command = ["echo", "${exec.launch.stdout} with ${var.registry}"]
}

output "config" {
  value = exec.configure.stdout
}
