# A process that outlives the run, started with a variable that flow destroy must
# not be given again, an exec task with an undo script and one without.

variable "dir" {
  type = string
}

task "exec" "prepare" {
  command = ["mkdir", "-p", "${var.dir}/run"]
  undo    = "rm -rf '${var.dir}/run' && echo removed run"
}

task "process" "sleeper" {
  description = "A host process that outlives the run."
  command     = ["sleep", "600"]
  pid_file    = "${var.dir}/run/sleeper.pid"
  log_file    = "${var.dir}/sleeper.log"
  depends_on  = [exec.prepare]
}

task "exec" "report" {
  command = ["echo", "sleeper runs as", process.sleeper.pid]
}

output "pid" {
  value = process.sleeper.pid
}
