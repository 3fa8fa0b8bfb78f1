variable "text" {
  type = string
}

task "exec" "echo" {
  command = ["echo", var.text]
}

output "echo" {
  value = exec.echo.stdout
}
