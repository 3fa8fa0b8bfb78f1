# k8s_job failures on the Kubernetes lab (e2e/k8s_lab_jobs_test.go): a step that exits 3,
# and one whose image the lab registry does not have.

variable "config_dir" { type = string }

task "k8s_job" "exit3" {
  kubeconfig = "${var.config_dir}/member1.config"
  image      = "localhost:32000/debian:bookworm"
  command    = ["sh", "-c", "echo about to fail; exit 3"]
}

task "k8s_job" "noimage" {
  kubeconfig = "${var.config_dir}/member2.config"
  image      = "localhost:32000/nothere:1.0"
  command    = ["true"]
}

task "k8s_job" "fanout_fail" {
  kubeconfig = "${var.config_dir}/karmada/karmada-apiserver.config"
  clusters   = ["member1", "member3"]
  image      = "localhost:32000/debian:bookworm"
  command    = ["sh", "-c", "echo propagated and failing; exit 4"]
}
