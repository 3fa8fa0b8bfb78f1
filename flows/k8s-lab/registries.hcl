# The lab's two registries, as in flows/local-lab.hcl: Debian's docker-registry in small
# busybox containers, forwarded from 127.0.0.1:32000 (the lab registry, MicroK8s's port) and
# 127.0.0.1:15000 (the stand-in for docker.io and registry.k8s.io, which images.hcl fills).

locals {
  registries = { "lab-registry" = var.registry_port, "lab-upstream" = var.upstream_port }
}

task "exec" "busybox_image" {
  description = "Build the small busybox image tarball (reproducible; a no-op when current)."
  command     = ["bash", "scripts/busybox-image.sh"]
  dir         = local.root
}

task "lxd_image_import" "busybox" {
  file       = "${local.root}/${exec.busybox_image.stdout}"
  alias      = "flow-lab-busybox"
  depends_on = [preflight.lab]
}

task "lxd_profile" "registry" {
  depends_on          = [preflight.lab]
  name                = "flow-lab-registry"
  profile_description = "flow lab registry: a small container without a network device"
  config              = { "limits.memory" = "256MiB", "limits.processes" = "200" }
}

task "exec" "stage_registry" {
  command = ["sh", "flows/local-lab/stage-registry.sh", ".lab/registry-root"]
  dir     = local.root
}

task "lxd_launch" "registry" {
  for_each = local.registries
  name     = each.key
  image    = lxd_image_import.busybox.alias
  profiles = ["default", lxd_profile.registry.name]
  wait_for = ["sh", "-c", "ip link show lo | grep -q UP"]
}

task "lxd_file_push" "registry" {
  for_each    = local.registries
  instance    = lxd_launch.registry[each.key].name
  source      = "${local.root}/${exec.stage_registry.stdout}"
  destination = "/opt/registry"
  mode        = "0755"
  create_dirs = true
}

task "lxd_exec" "start_registry" {
  for_each = local.registries
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
  for_each   = local.registries
  instance   = lxd_launch.registry[each.key].name
  name       = "registry"
  listen     = "tcp:127.0.0.1:${each.value}"
  connect    = "tcp:127.0.0.1:5000"
  depends_on = [lxd_exec.start_registry[each.key]]
}

task "wait_ready" "registry" {
  for_each     = local.registries
  kind         = "http"
  url          = "http://${proxy_device.registry[each.key].address}/v2/"
  wait_timeout = "1m"
}
