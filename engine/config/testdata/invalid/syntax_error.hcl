# A syntax error stops loading; nothing else is checked. HCL reports the missing
# comma where the next item starts.

task "exec" "a" {
  command = ["true",
  script  = "echo" # ERROR: Missing item separator
}

task "nope" "b" {
}
