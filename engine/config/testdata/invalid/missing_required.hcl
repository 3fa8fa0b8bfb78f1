# "needs" has the required attribute target; exec has none.

task "needs" "without_target" { # ERROR: Missing required argument # ERROR: The argument "target" is required
  count = 2
}

task "needs" "with_target" {
  target = "x"
}
