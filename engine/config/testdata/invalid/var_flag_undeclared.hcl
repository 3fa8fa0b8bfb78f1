# --var for a variable the flow does not declare; the error has no source range.

# VAR: regoin=us
# VAR: nonsense
# FLAG-ERROR: --var regoin: the flow declares no variable "regoin". Did you mean "region"?
# FLAG-ERROR: --var "nonsense": expected NAME=VALUE.

variable "region" {
  default = "eu"
}

task "exec" "a" {
  command = ["echo", var.region]
}
