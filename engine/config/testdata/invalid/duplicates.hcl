# Duplicate declarations: the detail names the first place.

variable "region" {
  default = "eu"
}

variable "region" { # ERROR: Duplicate variable # ERROR: already declared at testdata/invalid/duplicates.hcl:3,
  default = "us"
}

locals {
  name = "a"
}

locals {
  name = "b" # ERROR: Duplicate local value # ERROR: already defined at testdata/invalid/duplicates.hcl:12,
}

task "exec" "build" {
  command = ["true"]
}

task "exec" "build" { # ERROR: Duplicate task # ERROR: first at testdata/invalid/duplicates.hcl:19,
  command = ["false"]
}

task "needs" "build" {
  target = "a different type, so a different address"
}

output "result" {
  value = exec.build.stdout
}

output "result" { # ERROR: Duplicate output # ERROR: already declared at testdata/invalid/duplicates.hcl:31,
  value = needs.build.result
}
