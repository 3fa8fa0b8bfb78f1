# The lab's two registries, as in flows/local-lab.hcl (modules/lab-registries): Debian's
# docker-registry in small busybox containers, forwarded from 127.0.0.1:32000 (the lab registry, MicroK8s's port) and
# 127.0.0.1:15000 (the stand-in for docker.io and registry.k8s.io, which images.hcl fills).

locals {
  registries = { "lab-registry" = var.registry_port, "lab-upstream" = var.upstream_port }
}

task "exec" "busybox_image" {
  description = "Build the small busybox image tarball (reproducible; a no-op when current)."
  command     = ["bash", "scripts/busybox-image.sh"]
  dir         = local.root
  depends_on  = [exec.host_packages] # busybox-static
}

task "lxd_image_import" "busybox" {
  remote     = var.lxd_remote
  file       = "${local.root}/${exec.busybox_image.stdout}"
  alias      = "flow-lab-busybox"
  depends_on = [preflight.lab]
  # A cache, as the member image is: flow destroy leaves it.
  retain_on_destroy = true
}

task "lxd_profile" "registry" {
  remote              = var.lxd_remote
  depends_on          = [preflight.lab]
  name                = "flow-lab-registry"
  profile_description = "flow lab registry: a small container without a network device"
  config              = { "limits.memory" = "256MiB", "limits.processes" = "200" }
}

module "registries" {
  source     = "../modules/lab-registries"
  root       = local.root
  registries = local.registries
  image      = lxd_image_import.busybox.alias
  profiles   = ["default", lxd_profile.registry.name]
  remote     = var.lxd_remote
  addresses  = var.member_addresses
  depends_on = [exec.host_packages] # docker-registry, staged into the containers
}

output "registry" {
  description = "The lab registry on this machine, ADDRESS:PORT (on an LXD cluster, the address of the member LXD's scheduler put it on): follow-on flows push and pull there, e.g. flask-import's base_image."
  value       = module.registries.endpoints["lab-registry"]
}
