# local-lab.hcl — the seed lab's topology on one box, without MicroK8s: three member
# containers in LXD, each serving on 127.0.0.1:8080 inside and reached from the host only
# through LXD proxy devices on 127.0.0.1:16441/16442/16444 (containers get no network
# device), plus the lab's image registry on 127.0.0.1:32000 filled by mirroring from an
# "upstream" registry that carries the real Karmada and Kubernetes image names.
#
#   scripts/lab-setup.sh                 # once: installs and starts LXD (make demo does it)
#   flow run flows/local-lab.hcl         # Ctrl-C or kill it at any point, then:
#   flow resume                          # finishes without redoing what succeeded
#   flow destroy                         # removes everything this flow created

variable "members" {
  type        = map(number)
  default     = { member1 = 16441, member2 = 16442, member3 = 16444 }
  description = "Member container names and the host port forwarded to each one's service."
}

variable "image_alias" {
  type        = string
  default     = "flow-lab-busybox"
  description = "Alias of the busybox image the containers are launched from."
}

variable "registry_port" {
  type        = number
  default     = 32000
  description = "Host port of the lab registry (MicroK8s's registry port in the real lab)."
}

variable "upstream_port" {
  type        = number
  default     = 15000
  description = "Host port of the loopback registry that stands in for docker.io and registry.k8s.io."
}

variable "karmada_version" {
  type    = string
  default = "v1.13.0"
}

variable "kube_version" {
  type    = string
  default = "v1.31.3"
}

locals {
  root = "${path.flow}/.."
  # The lab's two registries, each a container running Debian's docker-registry.
  registries = { "lab-registry" = var.registry_port, "lab-upstream" = var.upstream_port }
  # Every image `karmadactl init` installs, under its real repository path, and the
  # Flask demo's base image (flows/flask-import.hcl).
  upstream_images = toset(concat(
    [for c in ["karmada-controller-manager", "karmada-scheduler", "karmada-webhook", "karmada-aggregated-apiserver"] : "karmada/${c}:${var.karmada_version}"],
    [for c in ["kube-apiserver", "kube-controller-manager"] : "${c}:${var.kube_version}"],
    ["etcd:3.5.16-0", "library/python:3.11-slim"],
  ))
}

task "exec" "busybox_image" {
  description = "Build the small busybox image tarball (reproducible; a no-op when current)."
  command     = ["bash", "scripts/busybox-image.sh"]
  dir         = local.root
}

task "preflight" "lab" {
  description      = "Before anything is created: LXD, the host ports (free or already the lab's), disk and memory."
  ports            = concat(values(var.members), [var.registry_port, var.upstream_port])
  instances        = concat(keys(var.members), keys(local.registries))
  min_free_disk_mb = 1024
  min_memory_mb    = 256
}

task "lxd_image_import" "busybox" {
  file       = "${local.root}/${exec.busybox_image.stdout}"
  alias      = var.image_alias
  depends_on = [preflight.lab]
}

task "lxd_profile" "lab" {
  depends_on  = [preflight.lab]
  name        = "flow-lab"
  description = "flow local lab: small containers without a network device"
  config      = { "limits.memory" = "256MiB", "limits.processes" = "200" }
}

task "lxd_launch" "member" {
  for_each = var.members
  name     = each.key
  image    = lxd_image_import.busybox.alias
  profiles = ["default", lxd_profile.lab.name]
  wait_for = ["sh", "-c", "ip link show lo | grep -q UP"]
}

task "lxd_file_push" "service" {
  for_each    = var.members
  instance    = lxd_launch.member[each.key].name
  destination = "/srv/www/index.html"
  content     = "member ${each.key}\n"
  create_dirs = true
}

task "lxd_exec" "start_service" {
  for_each = var.members
  instance = lxd_launch.member[each.key].name
  script   = "pidof httpd >/dev/null || httpd -p 127.0.0.1:8080 -h ${dirname(lxd_file_push.service[each.key].destination)}"
}

task "proxy_device" "service" {
  for_each   = var.members
  instance   = lxd_launch.member[each.key].name
  name       = "service"
  listen     = "tcp:127.0.0.1:${each.value}"
  connect    = "tcp:127.0.0.1:8080"
  depends_on = [lxd_exec.start_service[each.key]]
}

task "wait_ready" "member" {
  for_each     = var.members
  kind         = "http"
  url          = "http://${proxy_device.service[each.key].address}/"
  body_match   = "member ${each.key}"
  wait_timeout = "1m"
}

# The registries: Debian's docker-registry in containers, forwarded from 127.0.0.1:32000
# (lab) and 127.0.0.1:15000 (upstream).
module "registries" {
  source     = "./modules/lab-registries"
  root       = local.root
  registries = local.registries
  image      = lxd_image_import.busybox.alias
  profiles   = ["default", lxd_profile.lab.name]
}

task "image_build" "upstream" {
  for_each   = local.upstream_images
  base       = "scratch"
  layers     = [{ source = "${path.flow}/local-lab/upstream-image", destination = "/stand-in" }]
  labels     = { "org.opencontainers.image.ref.name" = each.key }
  cmd        = ["/stand-in/README"]
  push       = "127.0.0.1:${var.upstream_port}/${each.key}"
  insecure   = true
  depends_on = [module.registries]
}

task "image_mirror" "karmada" {
  images     = [for ref in local.upstream_images : "127.0.0.1:${var.upstream_port}/${ref}"]
  registry   = "127.0.0.1:${var.registry_port}"
  naming     = "flatten"
  insecure   = true
  depends_on = [image_build.upstream, module.registries]
}

output "members" {
  value = { for m, w in wait_ready.member : m => "http://${proxy_device.service[m].address}/" }
}

output "mirrored" {
  value = image_mirror.karmada.images
}
