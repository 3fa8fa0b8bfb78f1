# Values of the wrong type, all reported in one pass, each on its own attribute.

task "exec" "a" {
  command = "not a list" # ERROR: Incorrect attribute value type # ERROR: Inappropriate value for attribute "command"
  env     = 3            # ERROR: Inappropriate value for attribute "env"
}

task "exec" "b" {
  script        = "true"
  ok_exit_codes = ["three"] # ERROR: Inappropriate value for attribute "ok_exit_codes"
}

task "needs" "n" {
  target = ["x"]  # ERROR: Inappropriate value for attribute "target"
  count  = "many" # ERROR: Inappropriate value for attribute "count"
}
