# Mistakes found by every phase of loading, in one file and all in one pass: decoding
# (an unknown attribute, a default of the wrong type), the reference checks (what is
# not declared), expanding (a for_each that is no collection) and type checking
# (values of the wrong type), each on its own range.

variable "replicas" {
  type    = number
  default = "three" # ERROR: Invalid default value
}

task "exec" "typo" {
  comand  = ["true"]     # ERROR: Unsupported argument
  command = "not a list" # ERROR: Incorrect attribute value type # ERROR: Inappropriate value for attribute "command"
}

task "exec" "refs" {
  depends_on = [exec.nope]                # ERROR: Reference to undeclared task
  script     = "echo ${exec.nope.stdout}" # ERROR: Reference to undeclared task
  env        = 3                          # ERROR: Inappropriate value for attribute "env"
}

task "exec" "each" {
  for_each = 5 # ERROR: Invalid for_each
  command  = ["echo", each.key]
}

task "needs" "n" {
  target = var.replicas
  count  = "many" # ERROR: Inappropriate value for attribute "count"
}

tsk "exec" "root" { # ERROR: Unsupported block type
  command = ["true"]
}
