# flask-import.hcl — the lab's Flask demo image, built, saved to a tarball, pushed into
# every member container and imported into each member's container runtime, without a
# Docker daemon by default:
#
#   flow run flows/flask-import.hcl                                  # image_build (no Docker)
#   flow run flows/flask-import.hcl --var builder=docker             # docker build + docker save
#   flow run flows/flask-import.hcl --var members='["member1"]'      # only some members
#   flow run flows/flask-import.hcl --var-file flows/local-lab/flask-import.vars.hcl
#                                                                    # against the local lab
#
# Before the import, the tarball's sha256 is checked inside every member, so a member
# never imports a truncated or stale file.

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Member containers that receive the image."
}

variable "builder" {
  type        = string
  default     = "flow"
  description = "\"flow\": image_build and image_export, no Docker needed; \"docker\": docker build and docker save."
}

variable "base_image" {
  type        = string
  default     = "docker.io/library/python:3.11-slim"
  description = "Base image of the app (builder = \"flow\")."
}

variable "vendor_requirements" {
  type        = bool
  default     = true
  description = "Install requirements.txt into a layer with pip on the host (builder = \"flow\"); image_build runs no commands inside the image."
}

variable "registry" {
  type        = string
  default     = "localhost:32000"
  description = "Registry the built image is pushed to (the lab's MicroK8s registry)."
}

variable "insecure_registry" {
  type        = bool
  default     = true
  description = "The registry speaks plain HTTP (MicroK8s's registry addon does)."
}

variable "tag" {
  type    = string
  default = "1.0"
}

variable "import_script" {
  type        = string
  default     = "microk8s images import < /root/flask-demo.tar"
  description = "Run inside each member once the tarball is there and verified."
}

variable "run_in_members" {
  type        = bool
  default     = false
  description = "After the import, run the app in every member from the imported image and forward a host port to its pod."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where the lab wrote the members' kubeconfigs, as MEMBER.config (run_in_members)."
}

variable "app_ports" {
  type        = map(number)
  default     = { member1 = 15001, member2 = 15002, member3 = 15004 }
  description = "Host port forwarded to the app's pod in each member (run_in_members), on its host's address."
}

# Where each member runs, as flows/k8s-lab/hosts.hcl has it: on the two-host lab, pass its
# var file too (flows/k8s-lab/vars/two-hosts.hcl), and a member on another host gets the
# tarball through that host's LXD remote and its app port on the host's address.
variable "hosts" {
  type        = map(string)
  default     = {}
  description = "The host each member runs on (flows/k8s-lab's hosts); not named: host a, the local LXD daemon."
}

variable "remotes" {
  type        = map(map(string))
  default     = {}
  description = "Each other host's LXD remote (flows/k8s-lab's remotes)."
}

variable "host_addresses" {
  type        = map(string)
  default     = { a = "127.0.0.1" }
  description = "Each host's address, where the app ports of its members listen (flows/k8s-lab's host_addresses)."
}

variable "lxd_remote" {
  type        = map(string)
  default     = null
  description = "The LXD remote that is host a (flows/k8s-lab's lxd_remote): on an LXD cluster, the cluster's."
}

variable "targets" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: the cluster member each member container was placed on (flows/k8s-lab's targets)."
}

variable "member_addresses" {
  type        = map(string)
  default     = {}
  description = "On an LXD cluster: each cluster member's address (flows/k8s-lab's member_addresses), where the app ports of the containers it runs listen."
}

locals {
  host_of   = { for m in var.members : m => lookup(var.hosts, m, "a") }
  remote_of = { for m, h in local.host_of : m => h == "a" ? var.lxd_remote : var.remotes[h] }
  address_of = { for m, h in local.host_of : m => h == "a" && var.lxd_remote != null ?
  var.member_addresses[var.targets[m]] : var.host_addresses[h] }
  app     = "${path.flow}/flask-app"
  work    = "${path.cwd}/.flow/flask-demo"
  tarball = "${local.work}/flask-demo.tar"
  ref     = "${var.registry}/flask-demo:${var.tag}"
  # for_each over one key or none: how a flow picks one of two ways of doing a step.
  with_flow   = var.builder == "flow" ? toset(["app"]) : toset([])
  with_docker = var.builder == "docker" ? toset(["app"]) : toset([])
  with_vendor = var.builder == "flow" && var.vendor_requirements ? toset(["app"]) : toset([])
  run_members = var.run_in_members ? var.members : toset([])
}

task "exec" "vendor" {
  for_each    = local.with_vendor
  description = "pip install the requirements into a directory that becomes an image layer."
  command     = ["python3", "-m", "pip", "install", "--quiet", "--target", "${local.work}/site-packages", "-r", "${local.app}/requirements.txt"]
}

task "image_build" "app" {
  for_each = local.with_flow
  base     = var.base_image
  layers = concat(
    [{ source = "${local.app}/app.py", destination = "/app/app.py", mode = "0644" }],
    var.vendor_requirements ? [{ source = "${local.work}/site-packages", destination = "/app/site-packages" }] : [],
  )
  env           = { PYTHONPATH = "/app/site-packages" }
  workdir       = "/app"
  cmd           = ["python", "app.py"]
  exposed_ports = ["5000/tcp"]
  push          = local.ref
  insecure      = var.insecure_registry
  depends_on    = [exec.vendor]
}

task "image_export" "app" {
  for_each = local.with_flow
  # The tag names the image in the archive (what the runtime imports it as); the
  # digest pins exactly the image just built.
  image    = "${local.ref}@${image_build.app[each.key].digest}"
  path     = local.tarball
  insecure = var.insecure_registry
}

task "exec" "docker_build" {
  for_each = local.with_docker
  script   = "mkdir -p '${local.work}' && docker build -t '${local.ref}' '${local.app}' && docker save '${local.ref}' -o '${local.tarball}'"
}

task "exec" "tarball_sha256" {
  command    = ["sha256sum", local.tarball]
  depends_on = [image_export.app, exec.docker_build]
}

task "lxd_file_push" "tarball" {
  for_each    = var.members
  remote      = local.remote_of[each.key]
  instance    = each.key
  source      = local.tarball
  destination = "/root/flask-demo.tar"
  mode        = "0644"
  depends_on  = [exec.tarball_sha256]
}

task "lxd_exec" "verify" {
  for_each = var.members
  remote   = local.remote_of[each.key]
  instance = each.key
  script   = "echo '${split(" ", exec.tarball_sha256.stdout)[0]}  ${lxd_file_push.tarball[each.key].destination}' | sha256sum -c -"
}

task "lxd_exec" "import" {
  for_each   = var.members
  remote     = local.remote_of[each.key]
  instance   = each.key
  script     = var.import_script
  depends_on = [lxd_exec.verify[each.key]]
}

# Optionally, the app then runs from the imported image in every member (imagePullPolicy
# Never: only an import puts it there) and is reached on the host through a proxy device to
# its pod IP, the seed's direct-to-pod pattern.
task "k8s_apply" "app" {
  for_each   = local.run_members
  kubeconfig = "${var.config_dir}/${each.key}.config"
  content    = templatefile("${local.app}/deployment.yaml.tftpl", { image = local.ref, member = each.key })
  depends_on = [lxd_exec.import[each.key]]
}

task "wait_ready" "app" {
  for_each     = local.run_members
  kind         = "pods"
  kubeconfig   = k8s_apply.app[each.key].kubeconfig
  namespace    = "default"
  selector     = "app=flask-demo"
  min_count    = 1
  interval     = "1s"
  wait_timeout = "3m"
}

task "proxy_device" "app" {
  for_each = local.run_members
  remote   = local.remote_of[each.key]
  instance = each.key
  name     = "flask-demo"
  listen   = "tcp:${local.address_of[each.key]}:${var.app_ports[each.key]}"
  connect  = "tcp:${wait_ready.app[each.key].pod_ips[0]}:5000"
  recreate = true # a new pod has a new IP
}

task "wait_ready" "app_http" {
  for_each     = local.run_members
  kind         = "http"
  url          = "http://${proxy_device.app[each.key].address}/"
  body_match   = "hello from ${each.key}"
  wait_timeout = "1m"
}

output "image" {
  value = local.ref
}

output "sha256" {
  value = split(" ", exec.tarball_sha256.stdout)[0]
}
