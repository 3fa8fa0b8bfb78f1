# modules/lab-registries — the local labs' image registries: Debian's docker-registry with
# the glibc pieces it needs (flows/local-lab/stage-registry.sh), pushed into small
# containers that have no network device and forwarded from the host's 127.0.0.1 (on an
# LXD cluster, the address of the member each runs on), one per entry of registries.
# Used by flows/local-lab.hcl and flows/k8s-lab.
#
#   module "registries" {
#     source     = "./modules/lab-registries"
#     root       = local.root
#     registries = { "lab-registry" = 32000, "lab-upstream" = 15000 }
#     image      = lxd_image_import.busybox.alias
#     profiles   = ["default", lxd_profile.lab.name]
#   }

variable "root" {
  type        = string
  description = "The flow repository's root (where scripts/ and flows/ are)."
}

variable "registries" {
  type        = map(number)
  description = "Container name => host port forwarded to its registry."
}

variable "remote" {
  type        = map(string)
  default     = null
  description = "The LXD remote the containers run on (the remote map of the lxd tasks); null, this machine's daemon. On an LXD cluster, LXD's scheduler places them."
}

variable "addresses" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: each cluster member's address, by member name; a registry's proxy device listens on the address of the member its container runs on. A member not named, or a server that is no cluster: 127.0.0.1."
}

variable "image" {
  type        = string
  description = "Alias of the busybox image the containers are launched from."
}

variable "profiles" {
  type        = list(string)
  description = "Profiles of the containers, in order."
}

task "exec" "stage" {
  description = "Stage docker-registry and the glibc pieces it links against (idempotent)."
  command     = ["sh", "flows/local-lab/stage-registry.sh", ".lab/registry-root"]
  dir         = var.root
}

task "lxd_launch" "registry" {
  for_each = var.registries
  remote   = var.remote
  name     = each.key
  image    = var.image
  profiles = var.profiles
  wait_for = ["sh", "-c", "ip link show lo | grep -q UP"]
}

task "lxd_file_push" "registry" {
  for_each    = var.registries
  remote      = var.remote
  instance    = lxd_launch.registry[each.key].name
  source      = "${var.root}/${exec.stage.stdout}"
  destination = "/opt/registry"
  mode        = "0755"
  create_dirs = true
}

task "lxd_exec" "start" {
  for_each = var.registries
  remote   = var.remote
  instance = lxd_launch.registry[each.key].name
  script   = <<-EOT
    cd ${lxd_file_push.registry[each.key].destination}
    pidof docker-registry ld-linux-x86-64.so.2 >/dev/null && exit 0
    mkdir -p /var/lib/registry
    setsid ./lib64/ld-linux-x86-64.so.2 --library-path ./lib ./bin/docker-registry serve ./registry.yml \
      </dev/null >/var/log/registry.log 2>&1 &
  EOT
}

task "proxy_device" "registry" {
  for_each   = var.registries
  remote     = var.remote
  instance   = lxd_launch.registry[each.key].name
  name       = "registry"
  listen     = "tcp:${lookup(var.addresses, lxd_launch.registry[each.key].location, "127.0.0.1")}:${each.value}"
  connect    = "tcp:127.0.0.1:5000"
  depends_on = [lxd_exec.start[each.key]]
}

task "wait_ready" "registry" {
  for_each     = var.registries
  kind         = "http"
  url          = "http://${proxy_device.registry[each.key].address}/v2/"
  wait_timeout = "1m"
}

output "endpoints" {
  description = "Each registry's ADDRESS:PORT on the host, where its proxy device listens."
  value       = { for name, p in proxy_device.registry : name => p.address }
}

output "urls" {
  description = "Each registry's base URL on the host, once it answers."
  value       = { for name, w in wait_ready.registry : name => "http://${proxy_device.registry[name].address}" }
}
