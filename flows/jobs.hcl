# jobs.hcl — work on the lab's clusters, run as Kubernetes Jobs (make demo-jobs, after
# make demo): a smoke test in every member, fanned out by Karmada, and a CPU-bound job
# per member whose result a local step reads. Images come from the lab registry.
#
#   flow run flows/jobs.hcl
#   flow logs 'k8s_job.crunch["member2"]'
#   flow destroy flows/jobs.hcl     # deletes every Job it made, in every member

variable "config_dir" {
  type        = string
  default     = ".lab/k8s-lab"
  description = "Where the lab wrote its kubeconfigs (flows/k8s-lab's config_dir)."
}

variable "members" {
  type    = set(string)
  default = ["member1", "member2", "member3"]
}

variable "image" {
  type        = string
  default     = "localhost:32000/debian:bookworm"
  description = "The image the steps run, from the lab registry."
}

variable "crunch_mib" {
  type        = number
  default     = 256
  description = "MiB each member's CPU-bound step hashes."
}

# One Job in Karmada's API server, propagated to every member: each member's copy
# resolves the cluster's own API service by DNS and says which node ran it.
task "k8s_job" "smoke" {
  kubeconfig = "${var.config_dir}/karmada/karmada-apiserver.config"
  clusters   = sort(var.members)
  image      = var.image
  command    = ["sh", "-c"]
  args = [<<-EOT
    set -e
    getent hosts kubernetes.default.svc.cluster.local
    echo "smoke test on $(hostname): the cluster DNS answers"
    printf '{"pod":"%s"}' "$(hostname)" > /dev/termination-log
  EOT
  ]
  resources       = { requests = { cpu = "10m", memory = "16Mi" } }
  active_deadline = "2m"
  timeout         = "5m"
}

# A CPU-bound step in each member, straight through its own API server: it hands the
# digest it computed to the local step below.
task "k8s_job" "crunch" {
  for_each   = var.members
  kubeconfig = "${var.config_dir}/${each.key}.config"
  image      = var.image
  command    = ["sh", "-c"]
  args = [<<-EOT
    set -e
    sum=$(head -c ${var.crunch_mib}M /dev/zero | sha256sum | cut -d' ' -f1)
    echo "hashed ${var.crunch_mib} MiB on ${each.key}: $sum"
    printf '{"sha256":"%s","mib":${var.crunch_mib}}' "$sum" > /dev/termination-log
  EOT
  ]
  resources       = { requests = { cpu = "100m", memory = "16Mi" }, limits = { memory = "64Mi" } }
  backoff_limit   = 1
  active_deadline = "5m"
  timeout         = "10m"
}

# The local step: every member computed the same digest, or the cluster lied.
task "exec" "agree" {
  command = ["sh", "-c", <<-EOT
    set -e
    echo "smoke ran in: ${join(", ", sort(keys(k8s_job.smoke.members)))}"
    sums="${join(" ", [for m in sort(var.members) : k8s_job.crunch[m].outputs["sha256"]])}"
    first=$${sums%% *}
    for s in $sums; do [ "$s" = "$first" ] || { echo "members disagree: $sums" >&2; exit 1; }; done
    echo "all ${length(var.members)} members agree: $first"
  EOT
  ]
}
