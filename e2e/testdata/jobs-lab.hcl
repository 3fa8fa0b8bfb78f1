# The e2e of k8s_job on the Kubernetes lab (e2e/k8s_lab_jobs_test.go): 4 Jobs in every
# member through its own API server, one Job propagated to every member by Karmada, and
# a local step that writes what they handed on to a file.

variable "config_dir" { type = string }
variable "members" {
  type    = set(string)
  default = ["member1", "member2", "member3"]
}
variable "image" {
  type    = string
  default = "localhost:32000/debian:bookworm"
}
variable "sleep" {
  type        = number
  default     = 20
  description = "Seconds each Job runs: long enough to kill flow while they run."
}
variable "out" { type = string }
variable "run" {
  type        = string
  description = "Labels every Job, so the test counts this test's alone."
}

locals {
  work = { for p in setproduct(sort(var.members), [1, 2, 3, 4]) : "${p[0]}-${p[1]}" => p[0] }
}

task "k8s_job" "work" {
  for_each   = local.work
  kubeconfig = "${var.config_dir}/${each.value}.config"
  image      = var.image
  command    = ["sh", "-c"]
  args = [<<-EOT
    echo "work ${each.key} starts"
    sleep ${var.sleep}
    echo "work ${each.key} done"
    printf '{"key":"${each.key}","member":"${each.value}"}' > /dev/termination-log
  EOT
  ]
  resources = { requests = { cpu = "1m", memory = "8Mi" } }
  labels    = { "e2e-run" = var.run }
}

task "k8s_job" "fanout" {
  kubeconfig = "${var.config_dir}/karmada/karmada-apiserver.config"
  clusters   = sort(var.members)
  image      = var.image
  command    = ["sh", "-c"]
  args = [<<-EOT
    echo "fanout on $(hostname) starts"
    sleep ${var.sleep}
    printf '{"pod":"%s"}' "$(hostname)" > /dev/termination-log
  EOT
  ]
  resources = { requests = { cpu = "1m", memory = "8Mi" } }
  labels    = { "e2e-run" = var.run }
}

task "exec" "collect" {
  command = ["sh", "-c", <<-EOT
    {
      %{for k in sort(keys(local.work))~}
      echo "${k} ${k8s_job.work[k].outputs["key"]} ${k8s_job.work[k].outputs["member"]}"
      %{endfor~}
      %{for m in sort(keys(k8s_job.fanout.members))~}
      echo "fanout ${m} ${k8s_job.fanout.members[m].outputs["pod"]}"
      %{endfor~}
    } > "${var.out}"
  EOT
  ]
}
