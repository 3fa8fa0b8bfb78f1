# lab.hcl — the seed lab, for real: on one Ubuntu 22.04/24.04 server with snap and the
# internet, a host MicroK8s that runs the Karmada control plane and the image registry
# (localhost:32000), and three member clusters, each MicroK8s in an LXD container, reached
# from the host through LXD proxy devices on 127.0.0.1:16441/16442/16444 (16443 inside).
# Every image `karmadactl init` deploys is mirrored into the host registry first, so init
# pulls nothing from the internet; then flows/modules/karmada (the phase the local lab
# flows/k8s-lab runs too) installs Karmada, joins member1 and member2 in push mode,
# registers member3 in pull mode and propagates nginx to all three.
#
#   sudo flow run flows/lab.hcl --state .flow/lab.db   # as root; 20-30 minutes on a fresh server
#   sudo flow resume --state .flow/lab.db              # after Ctrl-C, a kill or a failed step
#   docs/flows/lab.md                    # variables, re-runs, teardown
#
# Afterwards: flows/nginx-demo.hcl, flows/monitoring.hcl, flows/pull-mode.hcl and
# flows/failover-drill.hcl build on what this flow leaves behind.

variable "members" {
  type        = map(number)
  default     = { member1 = 16441, member2 = 16442, member3 = 16444 }
  description = "Member containers and the host port forwarded to each one's API server (16443 inside; the host's own MicroK8s holds 16443)."
}

variable "karmada_version" {
  type        = string
  default     = "v1.13.0"
  description = "Version of karmadactl and of the Karmada images it deploys."
}

variable "karmadactl_sha256" {
  type        = string
  default     = ""
  description = "sha256 of karmadactl-linux-ARCH.tgz; empty: checked against the .sha256 file published with the release."
}

variable "karmadactl_path" {
  type        = string
  default     = "/usr/local/bin/karmadactl"
  description = "Where karmadactl is installed, and run from."
}

variable "kube_version" {
  type        = string
  default     = "v1.31.3"
  description = "Kubernetes version of the Karmada control plane: karmadactl v1.13.0's --kube-image-tag default."
}

variable "microk8s_channel" {
  type        = string
  default     = "1.31/stable"
  description = "Snap channel of MicroK8s, on the host and in every member."
}

variable "ubuntu_image" {
  type        = string
  default     = "ubuntu:22.04"
  description = "Image the member containers are launched from."
}

variable "registry" {
  type        = string
  default     = "localhost:32000"
  description = "The host MicroK8s registry addon, where the Karmada images are mirrored and pulled from."
}

variable "image_platforms" {
  type        = list(string)
  default     = ["linux/amd64"]
  description = "Platforms kept when mirroring multi-platform images; the server's own."
}

variable "karmada_data" {
  type        = string
  default     = "/etc/karmada"
  description = "karmadactl init's data directory: certificates and karmada-apiserver.config."
}

variable "pull_members" {
  type        = list(string)
  default     = ["member3"]
  description = "Members registered in pull mode (karmada-agent runs in them); the others are joined in push mode."
}

variable "etcd_data" {
  type        = string
  default     = "/var/lib/karmada-etcd"
  description = "Where Karmada's etcd keeps its data on the host (init's --etcd-data, hostPath mode)."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where each member's kubeconfig is written, as MEMBER.config."
}

locals {
  # The host MicroK8s's admin kubeconfig: karmadactl init deploys Karmada into it.
  host_kubeconfig = "/var/snap/microk8s/current/credentials/client.config"
  push_members    = sort(setsubtract(keys(var.members), var.pull_members))
  member_api_port = 16443

  # Every image karmadactl v1.13.0's init deploys (pkg/karmadactl/cmdinit/kubernetes/deploy.go):
  # the four Karmada components and karmada-agent (pull mode), kube-apiserver (as karmada-apiserver) and
  # kube-controller-manager at kube_version, etcd, and alpine for etcd's init container.
  # With --private-image-registry=REGISTRY, init names each one REGISTRY/LAST-PATH-ELEMENT,
  # which is image_mirror's "flatten" naming.
  karmada_images = [
    for c in ["karmada-controller-manager", "karmada-scheduler", "karmada-webhook", "karmada-aggregated-apiserver", "karmada-agent"] :
    "docker.io/karmada/${c}:${var.karmada_version}"
  ]
  kube_images = [
    "registry.k8s.io/kube-apiserver:${var.kube_version}",
    "registry.k8s.io/kube-controller-manager:${var.kube_version}",
    "registry.k8s.io/etcd:3.5.16-0",
  ]
  init_images = concat(local.karmada_images, local.kube_images, ["docker.io/library/alpine:3.21.0"])

  snaps = {
    lxd      = "lxd"
    microk8s = "microk8s --classic --channel=${var.microk8s_channel}"
  }
}

# --- the host ------------------------------------------------------------------------------

# Waits for apt's locks (another apt of the user's, or of ours) instead of failing on them.
task "exec" "host_packages" {
  command = ["bash", "${dirname(path.flow)}/scripts/apt-install.sh", "ca-certificates", "curl", "iptables", "snapd", "tar"]
  timeout = "20m"
  retry {
    attempts = 3
    delay    = "10s"
  }
}

# The snap store is the flakiest dependency of the lab: retry with a long backoff.
task "exec" "snap" {
  for_each   = local.snaps
  script     = "snap list ${each.key} >/dev/null 2>&1 && echo 'snap ${each.key} already present' || snap install ${each.value}"
  timeout    = "15m"
  depends_on = [exec.host_packages]
  retry {
    attempts  = 4
    delay     = "15s"
    max_delay = "2m"
  }
}

task "exec" "lxd_init" {
  description = "Initialise LXD with its defaults (a storage pool and the lxdbr0 bridge) once; load nf_conntrack."
  script      = <<-EOT
    export PATH="$PATH:/snap/bin"
    lxd waitready --timeout=120
    if lxc profile device get default root pool >/dev/null 2>&1; then
      echo "lxd init already present"
    else
      lxd init --auto
    fi
    ip link set lxdbr0 up
    # The microk8s profile mounts files of nf_conntrack, which exist once it is loaded.
    modprobe nf_conntrack
  EOT
  timeout     = "5m"
  depends_on  = [exec.snap["lxd"]]
}

# The seed's rules: a host firewall (Docker's, or a default DROP policy) would otherwise drop
# what lxdbr0 forwards — the members' downloads, and Karmada's pods reaching member API
# servers — and what the members send the host itself on lxdbr0 (DHCP and DNS from LXD's
# dnsmasq, the registry on the host's 32000, Karmada's API server on 32443). Not
# persistent: a reboot needs a new run of this flow.
task "exec" "lxd_forward" {
  script     = <<-EOT
    for rule in "FORWARD -i lxdbr0" "FORWARD -o lxdbr0" "INPUT -i lxdbr0"; do
      if iptables -C $rule -j ACCEPT 2>/dev/null; then
        echo "iptables $rule ACCEPT already present"
      else
        iptables -A $rule -j ACCEPT
      fi
    done
  EOT
  undo       = "for rule in 'FORWARD -i lxdbr0' 'FORWARD -o lxdbr0' 'INPUT -i lxdbr0'; do while iptables -D $rule -j ACCEPT 2>/dev/null; do :; done; done"
  depends_on = [exec.lxd_init]
}

task "exec" "karmadactl" {
  command    = ["sh", "${path.flow}/lab/install-karmadactl.sh", var.karmada_version, var.karmadactl_sha256, var.karmadactl_path]
  timeout    = "5m"
  depends_on = [exec.host_packages]
  retry {
    attempts = 3
    delay    = "10s"
  }
}

# --- the host MicroK8s: Karmada's host cluster and the lab registry --------------------------

task "exec" "host_microk8s" {
  script     = <<-EOT
    export PATH="$PATH:/snap/bin"
    microk8s status --wait-ready --timeout 600
    # enable is idempotent: an enabled addon is reported "already enabled".
    microk8s enable dns hostpath-storage registry
  EOT
  timeout    = "20m"
  depends_on = [exec.snap["microk8s"]]
  retry {
    attempts = 2
    delay    = "30s"
  }
}

task "wait_ready" "registry" {
  kind         = "http"
  url          = "http://${var.registry}/v2/"
  interval     = "2s"
  wait_timeout = "10m"
  depends_on   = [exec.host_microk8s]
}

# docker.io rate-limits anonymous pulls: a failed mirror is retried, and what was copied
# is skipped by the next attempt (one HEAD per image).
task "image_mirror" "karmada" {
  images     = local.init_images
  registry   = var.registry
  naming     = "flatten"
  platforms  = var.image_platforms
  insecure   = true # MicroK8s's registry addon speaks plain HTTP
  timeout    = "30m"
  depends_on = [wait_ready.registry]
  retry {
    attempts  = 3
    delay     = "30s"
    max_delay = "5m"
  }
}

# --- the members: MicroK8s in LXD --------------------------------------------------------------

# The well-known MicroK8s-in-LXD profile (MicroK8s docs, "MicroK8s in LXD"): a privileged,
# nesting container that may load the kernel modules Kubernetes networking needs and sees
# the host's conntrack, kmsg and bpf files.
task "lxd_profile" "microk8s" {
  name                = "microk8s"
  profile_description = "MicroK8s in LXD (flow lab)"
  config = {
    "boot.autostart"       = "true"
    "linux.kernel_modules" = "ip_vs,ip_vs_rr,ip_vs_wrr,ip_vs_sh,ip_tables,ip6_tables,netlink_diag,nf_nat,overlay,br_netfilter"
    "raw.lxc"              = "lxc.apparmor.profile=unconfined\nlxc.mount.auto=proc:rw sys:rw cgroup:rw\nlxc.cgroup.devices.allow=a\nlxc.cap.drop=\n"
    "security.nesting"     = "true"
    "security.privileged"  = "true"
  }
  devices = {
    aadisable  = { type = "disk", source = "/sys/module/nf_conntrack/parameters/hashsize", path = "/sys/module/nf_conntrack/parameters/hashsize" }
    aadisable2 = { type = "unix-char", source = "/dev/kmsg", path = "/dev/kmsg" }
    aadisable3 = { type = "disk", source = "/sys/fs/bpf", path = "/sys/fs/bpf" }
    aadisable4 = { type = "disk", source = "/proc/sys/net/netfilter/nf_conntrack_max", path = "/proc/sys/net/netfilter/nf_conntrack_max" }
  }
  depends_on = [exec.lxd_init]
}

# Each member's chain — launch, MicroK8s, the API's proxy device, its kubeconfig, its lxdbr0
# address, Ready nodes — is flows/modules/microk8s-member, also flows/pull-mode.hcl's; one
# instance per member, so member1's chain never waits for member2's.
module "member" {
  source           = "./modules/microk8s-member"
  for_each         = var.members
  name             = each.key
  host_port        = each.value
  image            = var.ubuntu_image
  profiles         = ["default", lxd_profile.microk8s.name]
  microk8s_channel = var.microk8s_channel
  config_dir       = var.config_dir
  api_port         = local.member_api_port
  depends_on       = [exec.lxd_forward]
}

# --- Karmada: the phase flows/k8s-lab runs on our own member image ---------------------------

# Karmada's controllers run as pods in the host MicroK8s: a push member's kubeconfig server,
# 127.0.0.1:PORT, would be their own loopback, so each Cluster's apiEndpoint, push or pull,
# is the member container's lxdbr0 address, which pods reach (through the host), this
# server reaches too, and MicroK8s's certificate holds: Karmada's cluster proxy answers for
# every member. karmada-agent in a pull member reaches the host's address, which init
# publishes.
# MicroK8s's convention, as in flows/k8s-lab: localhost:32000 inside every member is the
# host's registry, so the pull member's karmada-agent (its image is
# ${var.registry}/karmada-agent) and the demos' images are pulled from where image_mirror put
# them. MicroK8s's containerd already treats localhost:32000 as plain HTTP; the member's own
# port 32000 is free (its registry addon is not enabled).
task "proxy_device" "member_registry" {
  for_each   = var.members
  instance   = each.key
  name       = "registry"
  bind       = "instance"
  listen     = "tcp:127.0.0.1:32000"
  connect    = "tcp:127.0.0.1:${element(split(":", var.registry), 1)}"
  depends_on = [module.member, wait_ready.registry]
}

module "karmada" {
  source             = "./modules/karmada"
  karmadactl         = var.karmadactl_path
  karmadactl_version = var.karmada_version
  host_kubeconfig    = local.host_kubeconfig
  karmada_data       = var.karmada_data
  etcd_data          = var.etcd_data
  registry           = var.registry
  kube_image_tag     = var.kube_version
  push_members       = local.push_members
  pull_members       = var.pull_members
  kubeconfigs        = { for m in keys(var.members) : m => module.member[m].kubeconfig }
  api_endpoints      = { for m in keys(var.members) : m => "https://${module.member[m].address}:${local.member_api_port}" }
  nginx_clusters     = sort(keys(var.members))
  depends_on         = [exec.karmadactl, image_mirror.karmada, module.member, proxy_device.member_registry]
}

output "kubeconfigs" {
  description = "Each member's kubeconfig on the host (through its proxy device)."
  value       = { for m in keys(var.members) : m => module.member[m].kubeconfig }
}

output "karmada_kubeconfig" {
  description = "The Karmada API server's kubeconfig, written by karmadactl init."
  value       = module.karmada.kubeconfig
}

output "clusters" {
  value = module.karmada.clusters
}

output "nginx" {
  value = module.karmada.nginx
}
