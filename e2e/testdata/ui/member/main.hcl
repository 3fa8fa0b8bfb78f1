variable "name" {
  type = string
}

task "exec" "launch" {
  script = "echo launching ${var.name}"
}

task "exec" "configure" {
  depends_on = [exec.launch]
  script     = "echo configuring ${var.name}; sleep 0.2"
}
