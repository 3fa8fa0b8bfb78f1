# lab-doctor — the seed's troubleshooting guide as a flow, for a running k8s lab
# (flows/k8s-lab): lxc list, ss -tlpn for the proxy ports, the member's own processes,
# kubectl get nodes and the pending pods with their reasons, kubectl get clusters, and
# karmada-agent in the pull members. Each cluster is checked on its own, in parallel; each
# problem is one line naming the cluster, what is wrong and, after "fix:", the command
# that repairs it (from the repository's directory). When any line is not ok,
# exec.verdict fails and lists them, so the doctor exits 1 (0 on a whole lab), like
# `brew doctor` and kubeadm's preflight. Read-only: it changes nothing, and flow destroy
# of it has nothing to undo.
#
#   make demo-doctor        # flow run flows/lab-doctor.hcl --new --state .flow/lab-doctor.db
#
# Needs kubectl (Debian's kubernetes-client, which the lab installs) and ss (iproute2).

variable "members" {
  type        = map(number)
  default     = { member1 = 16441, member2 = 16442, member3 = 16444 }
  description = "Members of the lab and their API servers' host ports (flows/k8s-lab's members)."
}

variable "host_cluster" {
  type        = string
  default     = "karmada-host"
  description = "The lab's host cluster, where Karmada runs."
}

variable "host_port" {
  type        = number
  default     = 16443
  description = "Host port of the host cluster's API server."
}

variable "pull_members" {
  type        = list(string)
  default     = ["member3"]
  description = "Members registered in pull mode, where karmada-agent runs."
}

variable "config_dir" {
  type        = string
  default     = ""
  description = "The lab's config_dir (its kubeconfigs); default .lab/k8s-lab in the repository."
}

# Where each cluster runs, as flows/k8s-lab/hosts.hcl has it: the doctor takes the lab's
# own var file (make demo-2host-doctor passes flows/k8s-lab/vars/two-hosts.hcl) and checks
# a cluster on another host through that host's LXD remote and address.
variable "hosts" {
  type        = map(string)
  default     = {}
  description = "The host each cluster runs on (flows/k8s-lab's hosts); not named: host a, this machine."
}

variable "remotes" {
  type        = map(map(string))
  default     = {}
  description = "Each other host's LXD remote (flows/k8s-lab's remotes): address, client_cert, client_key, server_cert."
}

variable "host_addresses" {
  type        = map(string)
  default     = { a = "127.0.0.1" }
  description = "Each host's address, where its clusters' API ports listen (flows/k8s-lab's host_addresses)."
}

# On an LXD cluster (make demo-cluster-doctor passes flows/k8s-lab/vars/lxd-cluster.hcl):
# every cluster is reached through the cluster's remote, and its API port on the address
# of the cluster member it was placed on; its fixes say on which member.
variable "lxd_remote" {
  type        = map(string)
  default     = null
  description = "The LXD remote that is host a (flows/k8s-lab's lxd_remote): on an LXD cluster, the cluster's."
}

variable "targets" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: the cluster member each cluster was placed on (flows/k8s-lab's targets)."
}

variable "member_addresses" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: each cluster member's address (flows/k8s-lab's member_addresses)."
}

locals {
  config_dir = var.config_dir != "" ? var.config_dir : "${dirname(path.flow)}/.lab/k8s-lab"
  clusters   = merge(var.members, { (var.host_cluster) = var.host_port })
  doctor     = "${path.flow}/lab-doctor"
  on_cluster = var.lxd_remote != null
  host_of    = { for c, _ in local.clusters : c => lookup(var.hosts, c, "a") }
  # Where a check says to run its fixes, and where the cluster's API port listens.
  where_of   = { for c, h in local.host_of : c => h == "a" && local.on_cluster ? "${var.targets[c]} (LXD cluster member)" : h }
  address_of = { for c, h in local.host_of : c => h == "a" && local.on_cluster ? var.member_addresses[var.targets[c]] : var.host_addresses[h] }
  # The LXD remote of a cluster not on this machine's daemon, as cluster.sh's last four arguments.
  remote_of = { for c, h in local.host_of : c => h == "a" ? var.lxd_remote : var.remotes[h] }
  remote_args = { for c, r in local.remote_of : c => r == null ? ["", "", "", ""] : [
    r.address, r.client_cert, r.client_key, r.server_cert]
  }
}

task "exec" "cluster" {
  for_each    = local.clusters
  description = "One cluster: its container, processes, proxy port, node and pending pods."
  command = concat(["bash", "${local.doctor}/cluster.sh", each.key, tostring(each.value), "${local.config_dir}/${each.key}.config",
  local.where_of[each.key], local.address_of[each.key]], local.remote_args[each.key])
  timeout = "2m"
}

task "exec" "karmada" {
  description = "Karmada: the Clusters Ready, its components available, karmada-agent in the pull members."
  command     = ["bash", "${local.doctor}/karmada.sh", local.config_dir, var.host_cluster, join(",", var.pull_members)]
  timeout     = "2m"
}

task "exec" "verdict" {
  description = "Fails, listing them, when any finding is not ok: a script can act on the doctor's exit code."
  command = concat(["bash", "${local.doctor}/verdict.sh"],
    flatten([for c in exec.cluster : split("\n", trimspace(c.stdout))]),
    split("\n", trimspace(exec.karmada.stdout)),
  )
}

output "findings" {
  description = "One line per cluster that is fine, one per problem found."
  value = concat(
    flatten([for c in exec.cluster : split("\n", trimspace(c.stdout))]),
    split("\n", trimspace(exec.karmada.stdout)),
  )
}
