# karmada-e2e.hcl — what Karmada's own e2e suite needs on the running k8s lab (make demo),
# besides the lab: the images it names, in the lab registry under their Docker Hub paths
# (the members pull docker.io through localhost:32000, flows/k8s-lab/member/up.sh), the
# suite itself, built from the Go module proxy at the lab's Karmada version, and upstream's
# resource interpreter webhook example, deployed as hack/pre-run-e2e.sh does (at the end).
#
#   make karmada-e2e                       # this flow, then every spec that fits the lab
#   flow run flows/karmada-e2e.hcl --state .flow/karmada-e2e.db
#   bash scripts/karmada-e2e.sh run ci     # the subset make test runs
#
# Like the lab's other images, these are built here from Debian's packages: nginx is the
# lab's nginx (Debian's nginx-light) with a start-up line on its output as the real image's
# entrypoint prints one (karmadactl logs specs want a log), busybox the lab's Debian
# stand-in with sh, alpine that with curl (FederatedHPA's load), perl Debian's perl (5.36,
# with the newer Math::BigInt of its own package, whose bignum computes the suite's Job).
# The tags are the suite's, not the contents' versions.

variable "registry_port" {
  type        = number
  default     = 32000
  description = "Host port of the lab registry (flows/k8s-lab's registry_port)."
}

variable "image_nginx_tag" {
  type        = string
  default     = "1.27"
  description = "Tag of the lab's nginx in its registry (flows/k8s-lab's image_nginx_tag)."
}

variable "karmada_version" {
  type        = string
  default     = "v1.13.0"
  description = "The lab's Karmada version: the suite is built at it."
}

locals {
  registry = "127.0.0.1:${var.registry_port}"
  # The suite's image => the lab registry's image it is a copy of.
  copies = {
    "library/nginx:1.19.1"   = "library/nginx:1.19.0"
    "library/nginx:latest"   = "library/nginx:1.19.0"
    "library/busybox:1.36.0" = "alpine:3.21.0"
    "library/busybox:latest" = "alpine:3.21.0"
  }
  root = "${path.flow}/.."
}

task "exec" "perl_rootfs" {
  description = "A Debian root file system with perl and a newer Math::BigInt (cached by package list), gzipped into .lab/images."
  # Math::BigInt from its own package: perl 5.36's (1.999837) fails the suite's bpi(2000)
  # ("Can't use an undefined value as an ARRAY reference"); 1.999838 computes it.
  command = ["bash", "scripts/image-rootfs.sh", "perl", "perl", "libmath-bigint-perl"]
  dir     = local.root
  timeout = "20m"
}

task "image_build" "perl" {
  layers   = [{ tarball = exec.perl_rootfs.stdout }]
  env      = { PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
  cmd      = ["perl"]
  labels   = { "org.flowdev.lab.stand-in" = "Debian bookworm's perl, not perl:5.34.0" }
  push     = "${local.registry}/library/perl:5.34.0"
  insecure = true
  timeout  = "10m"
}

# FederatedHPA's pressure Job runs `apk add curl; while ...; do curl ...` in alpine:3.19.1:
# the apk fails (its output says so) and the loop goes on, so the stand-in needs sh and curl.
task "exec" "curl_rootfs" {
  description = "A Debian root file system with curl (cached by package list), gzipped into .lab/images."
  command     = ["bash", "scripts/image-rootfs.sh", "curl", "ca-certificates", "curl"]
  dir         = local.root
  timeout     = "20m"
}

task "image_build" "alpine" {
  layers   = [{ tarball = exec.curl_rootfs.stdout }]
  env      = { PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
  cmd      = ["/bin/sh"]
  labels   = { "org.flowdev.lab.stand-in" = "Debian bookworm minbase with curl, not Alpine (no apk)" }
  push     = "${local.registry}/library/alpine:3.19.1"
  insecure = true
  timeout  = "10m"
}

task "image_build" "nginx" {
  base = "${local.registry}/nginx:${var.image_nginx_tag}"
  # sh -c SCRIPT $0 "$@": the line, then nginx as the lab's image runs it.
  entrypoint = ["/bin/sh", "-c", "echo \"$0: configuration complete; ready for start up\" >&2; exec \"$@\"", "/docker-entrypoint.sh"]
  cmd        = ["nginx", "-g", "daemon off;"]
  labels     = { "org.flowdev.lab.stand-in" = "Debian bookworm's nginx-light, not nginx:1.19.0" }
  push       = "${local.registry}/library/nginx:1.19.0"
  insecure   = true
}

task "image_mirror" "copy" {
  for_each   = local.copies
  images     = { "${local.registry}/${each.value}" = each.key }
  registry   = local.registry
  insecure   = true
  depends_on = [image_build.nginx]
}

task "exec" "suite" {
  description = "Karmada's e2e suite (test/e2e/suites/base), built once per version into ~/.cache/flow/bin."
  command     = ["bash", "scripts/karmada-e2e.sh", "build"]
  env         = { KARMADA_VERSION = var.karmada_version }
  dir         = local.root
  timeout     = "30m"
}

output "suite" {
  value = exec.suite.stdout
}

output "images" {
  value = concat([image_build.perl.reference, image_build.nginx.reference, image_build.alpine.reference], [for c in image_mirror.copy : values(c.images)[0]])
}

# --- the resource interpreter webhook example --------------------------------------------
#
# What upstream's hack/pre-run-e2e.sh deploys for the suite's "Resource interpreter webhook
# testing": karmada-interpreter-webhook-example (examples/customresourceinterpreter of the
# Karmada module) in the host cluster, from upstream's own manifest; its
# ResourceInterpreterWebhookConfiguration in Karmada, upstream's file with the address
# and caBundle filled in; the Workload CRD in Karmada and in every member. The binary is
# built here from the module (scripts/k8s-bins.sh), the image is the lab's Debian with it,
# pushed where the members' docker.io mirror finds upstream's name
# (docker.io/karmada/karmada-interpreter-webhook-example:latest).
#
# Upstream gives the webhook a MetalLB address on kind's network, dialled by
# karmada-controller-manager and the pull member's karmada-agent. Here both dial
# 10.1.0.1:INTERPRETER_PORT, as the agent dials Karmada's API server (flows/k8s-lab/karmada.hcl):
# a NodePort of the host cluster (the controller manager runs on the node's network), and
# in each pull member a proxy device to this machine's 127.0.0.1:INTERPRETER_PORT, itself
# a proxy device to that NodePort.

variable "config_dir" {
  type        = string
  default     = ""
  description = "The lab's config dir (flows/k8s-lab's config_dir): its kubeconfigs; default .lab/k8s-lab in the repository."
}

variable "host_cluster" {
  type        = string
  default     = "karmada-host"
  description = "The host cluster's container (flows/k8s-lab's host_cluster), where the webhook example runs."
}

variable "members" {
  type        = list(string)
  default     = ["member1", "member2", "member3"]
  description = "The lab's members (the keys of flows/k8s-lab's members): each gets the Workload CRD."
}

variable "pull_members" {
  type        = list(string)
  default     = ["member3"]
  description = "The lab's pull members (flows/k8s-lab's pull_members): their karmada-agent dials the webhook through a proxy device."
}

variable "interpreter_webhook_port" {
  type        = number
  default     = 32445
  description = "The webhook example's NodePort in the host cluster, and the port of the proxy devices to it (this machine's 127.0.0.1, 10.1.0.1 in the pull members)."
}

locals {
  config_dir          = var.config_dir != "" ? var.config_dir : "${local.root}/.lab/k8s-lab"
  karmada_kubeconfig  = "${local.config_dir}/karmada/karmada-apiserver.config"
  host_kubeconfig     = "${local.config_dir}/${var.host_cluster}.config"
  bridge              = "10.1.0.1" # each cluster's cni0, in its own network namespace
  interpreter_address = "${local.bridge}:${var.interpreter_webhook_port}"
  interpreter_dir     = "${path.flow}/karmada-e2e/interpreter-webhook"
}

task "exec" "karmada_module" {
  description = "The Karmada module's directory at the lab's version (its examples/customresourceinterpreter)."
  script      = <<-EOT
    set -e
    cd "$(bash scripts/k8s-bins.sh module karmada)"
    go list -m -f '{{.Dir}}' github.com/karmada-io/karmada
  EOT
  env         = { KARMADA_VERSION = var.karmada_version }
  dir         = local.root
  timeout     = "10m"
}

task "exec" "interpreter_webhook_bin" {
  description = "karmada-interpreter-webhook-example, built from the Karmada module into ~/.cache/flow/bin."
  command     = ["bash", "scripts/k8s-bins.sh", "build", "karmada-interpreter-webhook-example"]
  env         = { KARMADA_VERSION = var.karmada_version }
  dir         = local.root
  timeout     = "20m"
  depends_on  = [exec.karmada_module]
}

# Where upstream's manifest and the image (docker.io/karmada/...:latest) name it; /usr/bin
# is /bin in the base (merged /usr), where the manifest runs it.
task "image_build" "interpreter_webhook" {
  base       = "${local.registry}/debian:bookworm"
  layers     = [{ source = exec.interpreter_webhook_bin.stdout, destination = "/usr/bin/karmada-interpreter-webhook-example", mode = "0755" }]
  entrypoint = ["/bin/karmada-interpreter-webhook-example"]
  labels     = { "org.flowdev.lab.built-here" = "karmada-interpreter-webhook-example ${var.karmada_version}, built from the Karmada module" }
  push       = "${local.registry}/karmada/karmada-interpreter-webhook-example:latest"
  insecure   = true
  timeout    = "10m"
}

task "exec" "interpreter_webhook_certs" {
  description = "The webhook's CA and serving certificate (SAN: where Karmada dials it) and the Secrets its Deployment mounts, into .lab/karmada-e2e."
  command = ["bash", "${local.interpreter_dir}/certs.sh", "${local.root}/.lab/karmada-e2e/interpreter-webhook", local.karmada_kubeconfig,
  "IP:${local.bridge},IP:127.0.0.1,DNS:karmada-interpreter-webhook-example.karmada-system.svc,DNS:karmada-interpreter-webhook-example-lab.karmada-system.svc"]
  undo = "rm -rf '${local.root}/.lab/karmada-e2e/interpreter-webhook'"
}

task "k8s_apply" "interpreter_webhook" {
  description = "The webhook example in the host cluster: its Secrets, upstream's manifest, the lab's NodePort Service."
  kubeconfig  = local.host_kubeconfig
  files = [
    "${exec.interpreter_webhook_certs.stdout}/secrets.yaml",
    "${exec.karmada_module.stdout}/examples/customresourceinterpreter/karmada-interpreter-webhook-example.yaml",
  ]
  content    = templatefile("${local.interpreter_dir}/service.yaml", { node_port = var.interpreter_webhook_port })
  depends_on = [image_build.interpreter_webhook]
}

task "wait_ready" "interpreter_webhook" {
  kind         = "deployment"
  kubeconfig   = local.host_kubeconfig
  namespace    = "karmada-system"
  name         = "karmada-interpreter-webhook-example"
  wait_timeout = "3m"
  depends_on   = [k8s_apply.interpreter_webhook]
}

task "proxy_device" "interpreter_webhook" {
  description = "This machine's 127.0.0.1:INTERPRETER_PORT to the webhook's NodePort in the host cluster."
  instance    = var.host_cluster
  name        = "interpreter-webhook"
  listen      = "tcp:127.0.0.1:${var.interpreter_webhook_port}"
  connect     = "tcp:${local.interpreter_address}"
  depends_on  = [k8s_apply.interpreter_webhook]
}

task "proxy_device" "interpreter_webhook_pull" {
  for_each    = toset(var.pull_members)
  description = "The webhook for karmada-agent: 10.1.0.1:INTERPRETER_PORT in the pull member to this machine's forwarded port."
  instance    = each.key
  name        = "to-interpreter-webhook"
  bind        = "instance"
  listen      = "tcp:0.0.0.0:${var.interpreter_webhook_port}"
  connect     = "tcp:127.0.0.1:${var.interpreter_webhook_port}"
  depends_on  = [proxy_device.interpreter_webhook]
}

task "wait_ready" "interpreter_webhook_https" {
  description = "The webhook answers over TLS with the certificate its CA signed, through the forwarded port."
  kind        = "http"
  url         = "https://${proxy_device.interpreter_webhook.address}/readyz"
  ca_file     = "${exec.interpreter_webhook_certs.stdout}/ca.crt"
  depends_on  = [wait_ready.interpreter_webhook]
}

task "k8s_apply" "interpreter_webhook_configuration" {
  description = "Upstream's ResourceInterpreterWebhookConfiguration in Karmada, with the webhook's address and caBundle."
  kubeconfig  = local.karmada_kubeconfig
  content = replace(replace(file("${exec.karmada_module.stdout}/examples/customresourceinterpreter/webhook-configuration.yaml"),
    "{{karmada-interpreter-webhook-example-svc-address}}:443", local.interpreter_address),
  "{{caBundle}}", base64encode(file("${exec.interpreter_webhook_certs.stdout}/ca.crt")))
  depends_on = [wait_ready.interpreter_webhook_https, proxy_device.interpreter_webhook_pull]
}

task "k8s_apply" "workload_crd" {
  for_each    = merge({ karmada = local.karmada_kubeconfig }, { for m in var.members : m => "${local.config_dir}/${m}.config" })
  description = "The example's Workload CRD, in Karmada and in every member."
  kubeconfig  = each.value
  files       = ["${exec.karmada_module.stdout}/examples/customresourceinterpreter/apis/workload.example.io_workloads.yaml"]
}

output "interpreter_webhook" {
  value = "https://${local.interpreter_address}/interpreter-workload"
}
