# Errors of the task type's Validate, on the attribute they name, and of the shared
# settings timeout and retry; all in one pass.

task "exec" "both" {
  command = ["true"]
  script  = "true" # ERROR: Invalid exec task # ERROR: exec.both: script: command and script are mutually exclusive
}

task "exec" "neither" { # ERROR: exec.neither: command: one of command or script is required
  dir = "/tmp"
}

task "exec" "empty_program" {
  command = ["", "x"] # ERROR: first element (the program) must not be empty
}

task "exec" "bad_env" {
  script = "true"
  env    = { "A=B" = "1" } # ERROR: variable names must be non-empty
}

task "exec" "each_bad" {
  for_each = toset(["x", "y"])
  command  = ["true"]
  script   = "echo ${each.key}" # ERROR: exec.each_bad: script: command and script are mutually exclusive
}

task "exec" "timeout" {
  command = ["true"]
  timeout = "soon" # ERROR: Invalid timeout # ERROR: timeout must be a positive duration
}

task "exec" "negative_timeout" {
  command = ["true"]
  timeout = "-5s" # ERROR: Invalid timeout
}

task "exec" "retry" {
  command = ["true"]
  retry {
    attempts  = 0     # ERROR: Invalid retry attempts # ERROR: attempts must be a whole number of at least 1
    delay     = "1x"  # ERROR: Invalid delay
    max_delay = "10s"
  }
}

task "exec" "fraction" {
  command = ["true"]
  retry {
    attempts = 1.5 # ERROR: Invalid retry attempts
  }
}

task "needs" "duration" {
  target = "x"
  within = "5 minutes" # ERROR: Invalid needs task # ERROR: needs.duration: within: "5 minutes" is not a duration such as "90s" or "5m"
}

task "needs" "negative" {
  target = "x"
  within = "-1s" # ERROR: needs.negative: within: "-1s" must not be negative
}
