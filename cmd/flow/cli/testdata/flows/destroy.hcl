# A process that outlives the run, started with a variable that flow destroy must
# not be given again, and an exec task that cannot be undone.

variable "dir" {
  type = string
}

task "exec" "prepare" {
  command = ["mkdir", "-p", "${var.dir}/run"]
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
