# karmada-e2e.hcl — what Karmada's own e2e suite needs on the running k8s lab (make demo),
# besides the lab: the images it names, in the lab registry under their Docker Hub paths
# (the members pull docker.io through localhost:32000, flows/k8s-lab/member/up.sh), and
# the suite itself, built from the Go module proxy at the lab's Karmada version.
#
#   make karmada-e2e                       # this flow, then every spec that fits the lab
#   flow run flows/karmada-e2e.hcl --state .flow/karmada-e2e.db
#   bash scripts/karmada-e2e.sh run ci     # the subset make test runs
#
# Like the lab's other images, these are built here from Debian's packages: nginx is the
# lab's nginx (Debian's nginx-light) with a start-up line on its output as the real image's
# entrypoint prints one (karmadactl logs specs want a log), busybox and alpine the lab's
# Debian stand-in with sh, perl Debian's perl (5.36, with the newer Math::BigInt of its
# own package, whose bignum computes the suite's Job). The tags are the suite's, not the contents' versions.

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
    "library/alpine:3.19.1"  = "alpine:3.21.0"
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
  value = concat([image_build.perl.reference, image_build.nginx.reference], [for c in image_mirror.copy : values(c.images)[0]])
}
