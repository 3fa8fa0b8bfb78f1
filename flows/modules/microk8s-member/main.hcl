# modules/microk8s-member — one MicroK8s cluster in an LXD container, reached from the host
# through a proxy device on 127.0.0.1:HOST_PORT: launch, install and start MicroK8s, forward
# its API server, write a kubeconfig for the host, and wait for its node. Called once per
# member (for_each), its tasks are addressed module.NAME["MEMBER"].TYPE.NAME, so each
# member's chain waits only on its own steps.
#
#   module "member" {
#     source    = "./modules/microk8s-member"
#     for_each  = var.members                      # member => host port
#     name      = each.key
#     host_port = each.value
#     profiles  = ["default", lxd_profile.microk8s.name]
#   }
#
# Outputs: kubeconfig (its path, once the node is Ready), api_address (127.0.0.1:PORT),
# address (the container's lxdbr0 address) and admin_config (`microk8s config`, sensitive).

variable "name" {
  type        = string
  description = "Container name; also the cluster, context and user name in the kubeconfig."
}

variable "host_port" {
  type        = number
  description = "Host port on 127.0.0.1 forwarded to the member's API server."
}

variable "image" {
  type        = string
  default     = "ubuntu:22.04"
  description = "Image the container is launched from."
}

variable "profiles" {
  type        = list(string)
  default     = ["default", "microk8s"]
  description = "LXD profiles, in order: the MicroK8s-in-LXD profile among them."
}

variable "microk8s_channel" {
  type        = string
  default     = "1.31/stable"
  description = "Snap channel of MicroK8s."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where the kubeconfig is written, as NAME.config."
}

variable "api_port" {
  type        = number
  default     = 16443
  description = "MicroK8s's API server port inside the container."
}

task "lxd_launch" "this" {
  name     = var.name
  image    = var.image
  profiles = var.profiles
  # cloud-init finishing means the network is up and snapd is seeded.
  wait_for     = ["cloud-init", "status", "--wait"]
  wait_timeout = "10m"
  timeout      = "20m"
  retry {
    attempts = 2
    delay    = "30s"
  }
}

# The snap store is flaky: retry with a long backoff.
task "lxd_exec" "microk8s_install" {
  instance = lxd_launch.this.name
  script   = "snap list microk8s >/dev/null 2>&1 && echo 'microk8s already present' || snap install microk8s --classic --channel=${var.microk8s_channel}"
  timeout  = "15m"
  retry {
    attempts  = 4
    delay     = "15s"
    max_delay = "2m"
  }
}

task "lxd_exec" "microk8s_ready" {
  instance   = lxd_launch.this.name
  script     = <<-EOT
    export PATH="$PATH:/snap/bin"
    microk8s status --wait-ready --timeout 600
    microk8s enable dns hostpath-storage
  EOT
  timeout    = "20m"
  depends_on = [lxd_exec.microk8s_install]
  retry {
    attempts = 2
    delay    = "30s"
  }
}

task "proxy_device" "api" {
  instance   = lxd_launch.this.name
  name       = "k8s-api"
  listen     = "tcp:127.0.0.1:${var.host_port}"
  connect    = "tcp:127.0.0.1:${var.api_port}"
  depends_on = [lxd_exec.microk8s_ready]
}

# `microk8s config` prints the member's admin kubeconfig: never shown, logged or stored.
task "lxd_exec" "microk8s_config" {
  instance         = lxd_launch.this.name
  command          = ["/snap/bin/microk8s", "config"]
  sensitive_stdout = true
  depends_on       = [lxd_exec.microk8s_ready]
}

# For the host: the member's API through its proxy device. MicroK8s names every context
# "microk8s"; renaming them after the member lets the files be merged.
task "kubeconfig" "host" {
  content      = lxd_exec.microk8s_config.stdout
  server       = "https://${proxy_device.api.address}"
  cluster_name = var.name
  context_name = var.name
  user_name    = var.name
  path         = "${var.config_dir}/${var.name}.config"
}

# The container's lxdbr0 address: eth0's, not the pod network's that MicroK8s adds (which
# lxd_launch's ipv4 output would list too, once MicroK8s runs).
task "lxd_exec" "address" {
  instance   = lxd_launch.this.name
  script     = <<-EOT
    addr=$(ip -4 -o addr show dev eth0 scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
    test -n "$addr" && echo "$addr"
  EOT
  depends_on = [lxd_exec.microk8s_ready]
}

task "wait_ready" "nodes" {
  kind         = "nodes"
  kubeconfig   = kubeconfig.host.path
  interval     = "2s"
  wait_timeout = "10m"
}

output "kubeconfig" {
  description = "The host's kubeconfig of the member; reading it waits until the node is Ready."
  value       = wait_ready.nodes.kubeconfig
}

output "api_address" {
  description = "127.0.0.1:HOST_PORT, the proxy device's listen address."
  value       = proxy_device.api.address
}

output "address" {
  description = "The container's lxdbr0 address, which pods in other clusters can reach."
  value       = trimspace(lxd_exec.address.stdout)
}

output "admin_config" {
  description = "`microk8s config`: the admin kubeconfig, with the container's own server address."
  value       = lxd_exec.microk8s_config.stdout
  sensitive   = true
}
