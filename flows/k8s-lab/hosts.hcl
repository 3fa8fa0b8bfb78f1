# hosts.hcl — where each cluster runs. By default every cluster is on this machine (host
# "a", the local LXD daemon). With `hosts` and `remotes`, clusters run on other LXD hosts
# too (make demo-2host: member2 and member3 on host B, scripts/lab-host-b.sh): each such
# host gets the member profile and a copy of the member image, each cluster's LXD tasks
# act on its host, and its proxy devices listen on its host's address. The host cluster
# (Karmada's) and the registries stay on host a, which every other host reaches by
# host_addresses["a"]. docs/k8s-lab.md says which ports must be open between real hosts.
#
# Host a may itself be an LXD cluster (make demo-cluster, scripts/lab-cluster.sh): with
# lxd_remote, every LXD task of host a acts on that remote instead of the local daemon;
# targets places each cluster on a cluster member, the registries go where LXD's
# scheduler puts them, and every proxy device listens on the address of the member its
# instance runs on (member_addresses).

variable "hosts" {
  type        = map(string)
  default     = {}
  description = "The host each cluster runs on, by cluster name (e.g. { member2 = \"b\" }); a cluster not named runs on host a, this machine's LXD daemon."
}

variable "remotes" {
  type        = map(map(string))
  default     = {}
  description = "The LXD remote of each host but a, by host name: the remote map of the lxd tasks (address, client_cert, client_key, server_cert, or trust_token). scripts/lab-host-b.sh start prints host B's."
}

variable "host_addresses" {
  type        = map(string)
  default     = { a = "127.0.0.1" }
  description = "Each host's address as the others reach it: the proxy devices of its clusters listen there, and kubeconfigs and certificates name it. Host a's is where the registry and Karmada's API server are reached."
}

variable "lxd_remote" {
  type        = map(string)
  default     = null
  description = "The LXD remote that is host a (the remote map of the lxd tasks); null, this machine's daemon. An LXD cluster's remote puts the lab on that cluster (scripts/lab-cluster.sh start prints it): then every cluster on host a needs a member in targets."
}

variable "targets" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster (lxd_remote): the cluster member each cluster of host a is created on, by cluster name (lxd_launch's target); its proxy devices listen on that member's address."
}

variable "member_addresses" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster (lxd_remote): each cluster member's address, by member name. The proxy devices of an instance listen on the address of the member it runs on (the registries': where LXD's scheduler put them)."
}

locals {
  host_of = { for c, _ in local.clusters : c => lookup(var.hosts, c, "a") }
  # null on host a without lxd_remote: the local daemon, recorded as before hosts existed.
  remote_of = { for c, h in local.host_of : c => h == "a" ? var.lxd_remote : var.remotes[h] }
  target_of = { for c, h in local.host_of : c => h == "a" && var.lxd_remote != null ? var.targets[c] : null }
  address_of = { for c, h in local.host_of : c => local.target_of[c] != null ?
  var.member_addresses[local.target_of[c]] : var.host_addresses[h] }
  far_hosts = toset([for c, h in local.host_of : h if h != "a"])
  # Where this machine and the other hosts reach Karmada's API server.
  karmada_address = local.address_of[var.host_cluster]
}

# The member profile and image on each other host, as lxd_profile.member and
# lxd_image_import.member make them on host a. The image copy is not kept: a teardown
# leaves nothing on another host.
task "lxd_profile" "member_far" {
  for_each            = local.far_hosts
  remote              = var.remotes[each.key]
  name                = lxd_profile.member.name
  profile_description = lxd_profile.member.profile_description
  config              = lxd_profile.member.config
}

task "lxd_image_copy" "member" {
  for_each = local.far_hosts
  image    = lxd_image_import.member.alias
  to       = var.remotes[each.key]
}
