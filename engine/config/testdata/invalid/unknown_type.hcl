# An unknown task type: the detail suggests the near one and lists the known types.

task "exce" "build" { # ERROR: Unknown task type # ERROR: Did you mean "exec"? # ERROR: Known types: "exec", "needs".
  command = ["go", "build"]
}

task "docker" "image" { # ERROR: There is no task type "docker". Known types: "exec", "needs".
  image = "alpine"
}

task "exec" "ok" {
  command = ["echo", exce.build.stdout]
}
