# k8s-lab — the seed lab's members, for real, on one box with no snap and no internet: three
# single-node Kubernetes clusters, each in its own LXD container (MicroK8s's parts, started
# by flows/k8s-lab/member/up.sh: containerd, etcd, kube-apiserver on 16443 inside,
# controller manager, scheduler, kubelet, kube-proxy, CoreDNS), reached from the host only
# through LXD proxy devices on 127.0.0.1:16441/16442/16444, with kubeconfigs rewritten to
# those ports; a registry on 127.0.0.1:32000 (reached inside every member as localhost:32000,
# MicroK8s's convention) preloaded by image_mirror from a stand-in upstream registry that
# holds images built here; and workloads running in every member.
#
#   make demo                          # builds what is missing, then: flow run flows/k8s-lab
#   make demo-resume                   # after Ctrl-C or a kill
#   make demo-teardown                 # flow destroy: removes everything the lab created
#
# docs/k8s-lab.md says what each piece is and what differs from the seed's MicroK8s.

variable "members" {
  type        = map(number)
  default     = { member1 = 16441, member2 = 16442, member3 = 16444 }
  description = "Member containers and the host port forwarded to each one's API server (16443 inside)."
}

variable "host_cluster" {
  type        = string
  default     = "karmada-host"
  description = "The host cluster's container: a fourth cluster from the member image (the seed's host MicroK8s), where karmadactl init installs Karmada."
}

variable "host_port" {
  type        = number
  default     = 16443
  description = "Host port forwarded to the host cluster's API server (16443, as the seed's host MicroK8s)."
}

variable "config_dir" {
  type        = string
  default     = ""
  description = "Where MEMBER.config kubeconfigs and the members' credentials are written; default .lab/k8s-lab in the repository."
}

variable "kube_version" {
  type        = string
  default     = "v1.31.4"
  description = "Version of the Kubernetes binaries in the member image (built by exec.kube_bin, bins.hcl)."
}

variable "karmada_version" {
  type        = string
  default     = "v1.13.0"
  description = "Version of the Karmada binaries and images (built by exec.karmada_bin, bins.hcl)."
}

variable "registry_port" {
  type        = number
  default     = 32000
  description = "Host port of the lab registry (MicroK8s's registry port); members reach it as localhost:32000."
}

variable "upstream_port" {
  type        = number
  default     = 15000
  description = "Host port of the registry that stands in for docker.io and registry.k8s.io."
}

locals {
  root       = dirname(dirname(path.flow)) # the repository: scripts/, cmd/, .lab/
  member_dir = "${path.flow}/member"
  config_dir = var.config_dir != "" ? var.config_dir : "${local.root}/.lab/k8s-lab"
  # Every cluster of the lab: the members and the host cluster, each from the member image.
  clusters = merge(var.members, { (var.host_cluster) = var.host_port })
  # The host ports the lab binds on this machine (host a; hosts.hcl).
  ports_on_a = concat([for c, p in local.clusters : p if local.host_of[c] == "a"],
    [var.registry_port, var.upstream_port, var.karmada_port],
  [for m, p in var.web_ports : p if lookup(local.host_of, m, "a") == "a"])
}

# Everything the lab writes on this machine is under config_dir (kubeconfigs, credentials,
# Karmada's data and its etcd's), so flow destroy removes it last, after everything that
# wrote there is gone.
task "exec" "config_dir" {
  description = "Create the lab's config directory; flow destroy removes it and all in it."
  command     = ["mkdir", "-p", local.config_dir]
  undo        = "rm -rf '${local.config_dir}'"
  depends_on  = [preflight.lab]
}

task "preflight" "lab" {
  description      = "Before anything is created: LXD, nesting and privileged containers, the host ports (free or already the lab's), disk and memory."
  ports            = var.lxd_remote == null ? local.ports_on_a : []                           # else bound on the cluster's members
  remotes          = merge(var.remotes, var.lxd_remote == null ? {} : { a = var.lxd_remote }) # each answers and trusts this machine (hosts.hcl)
  instances        = concat(keys(local.clusters), keys(local.registries))
  privileged       = true
  min_free_disk_mb = 8192
  min_memory_mb    = 6144
}
