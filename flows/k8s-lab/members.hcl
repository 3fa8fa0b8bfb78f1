# The clusters (the members and the host cluster): one LXD container each, launched from the member image, given its own PKI,
# its Kubernetes started inside, its API server forwarded to the host and the registry
# forwarded in, then waited on until the node is Ready and cluster DNS answers.

# The member's root file system: MicroK8s's runtime parts from Debian's packages. It starts
# once the images' base root has filled the shared download cache.
task "exec" "member_rootfs" {
  description = "The member image's Debian root file system (cached by package list)."
  command = ["bash", "scripts/debian-rootfs.sh", "member", "containerd", "runc", "containernetworking-plugins",
  "iptables", "iproute2", "procps", "ca-certificates", "etcd-server", "conntrack", "tini"]
  dir        = local.root
  timeout    = "20m"
  depends_on = [exec.image_rootfs_base]
}

task "exec" "member_image" {
  description = "Build the member image (Debian + containerd + Kubernetes; cached by its inputs)."
  command     = ["bash", "scripts/member-image.sh", exec.member_rootfs.stdout, dirname(exec.kube_bin["kube-apiserver"].stdout), var.kube_version]
  dir         = local.root
  timeout     = "20m"
  depends_on  = [exec.kube_bin]
}

# A rebuilt image (a new binary, package list or init) moves the alias; running members
# keep the image they were created from until they are recreated.
task "lxd_image_import" "member" {
  remote     = var.lxd_remote
  file       = "${local.root}/${exec.member_image.stdout}"
  alias      = "flow-member"
  recreate   = true
  depends_on = [preflight.lab]
  # A cache: flow destroy leaves the image, so the next run launches at once.
  retain_on_destroy = true
}

# What MicroK8s's LXD profile grants: a privileged, nesting container with every device and
# read-write /proc and /sys, so containerd, runc and the kubelet work inside. No NIC.
task "lxd_profile" "member" {
  remote              = var.lxd_remote
  depends_on          = [exec.config_dir]
  name                = "flow-member"
  profile_description = "flow Kubernetes lab member: privileged, nesting, no network device"
  config = {
    "security.privileged" = "true"
    "security.nesting"    = "true"
    "raw.lxc"             = "lxc.apparmor.profile=unconfined\nlxc.cap.drop=\nlxc.cgroup.devices.allow=a\nlxc.mount.auto=proc:rw sys:rw cgroup:rw"
  }
}

task "lxd_launch" "member" {
  for_each   = local.clusters
  remote     = local.remote_of[each.key]
  target     = local.target_of[each.key]
  name       = each.key
  image      = lxd_image_import.member.alias
  profiles   = each.key == var.host_cluster ? ["default", lxd_profile.member.name, lxd_profile.karmada_host.name] : ["default", lxd_profile.member.name]
  wait_for   = ["test", "-e", "/run/flow-member-init.done"]
  depends_on = [lxd_profile.member_far, lxd_image_copy.member] # on another host
}

# The API server's certificate names its host's address too when that is not 127.0.0.1.
task "exec" "member_pki" {
  for_each = local.clusters
  command = concat(["sh", "${local.member_dir}/pki.sh", "${local.config_dir}/pki/${each.key}", each.key],
  local.address_of[each.key] == "127.0.0.1" ? [] : [local.address_of[each.key]])
  depends_on = [exec.config_dir]
}

task "lxd_file_push" "member_pki" {
  for_each    = local.clusters
  remote      = local.remote_of[each.key]
  instance    = lxd_launch.member[each.key].name
  source      = exec.member_pki[each.key].stdout
  destination = "/var/lib/k8s/pki"
  mode        = "0600"
  create_dirs = true
}

task "lxd_file_push" "member_scripts" {
  for_each    = local.clusters
  remote      = local.remote_of[each.key]
  instance    = lxd_launch.member[each.key].name
  source      = local.member_dir
  destination = "/opt/flow-member"
  create_dirs = true
}

# MicroK8s's convention: localhost:32000 inside the member is the registry, on host a.
task "proxy_device" "member_registry" {
  for_each = local.clusters
  remote   = local.remote_of[each.key]
  instance = lxd_launch.member[each.key].name
  name     = "registry"
  bind     = "instance"
  listen   = "tcp:127.0.0.1:32000"
  connect  = "tcp:${module.registries.endpoints["lab-registry"]}"
}

task "lxd_exec" "member_up" {
  for_each   = local.clusters
  remote     = local.remote_of[each.key]
  instance   = lxd_launch.member[each.key].name
  command    = ["sh", "${lxd_file_push.member_scripts[each.key].destination}/up.sh"]
  depends_on = [lxd_file_push.member_pki[each.key]]
}

task "proxy_device" "member_api" {
  for_each   = local.clusters
  remote     = local.remote_of[each.key]
  instance   = lxd_launch.member[each.key].name
  name       = "api"
  listen     = "tcp:${local.address_of[each.key]}:${each.value}"
  connect    = "tcp:127.0.0.1:16443"
  depends_on = [lxd_exec.member_up[each.key]]
}

# As `microk8s config`: the member's admin kubeconfig, printed inside and rewritten to the
# forwarded port. It holds the admin token, so it is never shown.
task "lxd_exec" "member_config" {
  for_each         = local.clusters
  remote           = local.remote_of[each.key]
  instance         = lxd_launch.member[each.key].name
  command          = ["sh", "/opt/flow-member/config.sh"]
  sensitive_stdout = true
  depends_on       = [lxd_exec.member_up[each.key]]
}

task "kubeconfig" "member" {
  for_each     = local.clusters
  content      = lxd_exec.member_config[each.key].stdout
  server       = "https://${proxy_device.member_api[each.key].address}"
  context_name = each.key
  path         = "${local.config_dir}/${each.key}.config"
}

task "wait_ready" "member_node" {
  for_each     = local.clusters
  kind         = "nodes"
  kubeconfig   = kubeconfig.member[each.key].path
  interval     = "1s"
  wait_timeout = "5m"
}

task "k8s_apply" "member_dns" {
  for_each   = local.clusters
  kubeconfig = kubeconfig.member[each.key].path
  content    = file("${local.member_dir}/coredns.yaml")
  depends_on = [wait_ready.member_node[each.key], image_mirror.lab]
}

task "wait_ready" "member_dns" {
  for_each     = local.clusters
  kind         = "deployment"
  kubeconfig   = kubeconfig.member[each.key].path
  namespace    = "kube-system"
  name         = "coredns"
  interval     = "1s"
  wait_timeout = "5m"
  depends_on   = [k8s_apply.member_dns[each.key]]
}

# MicroK8s's hostpath-storage addon: the default StorageClass microk8s-hostpath, served by
# a hostpath provisioner built here (flows/k8s-lab/hostpath, images.hcl).
task "k8s_apply" "member_storage" {
  for_each   = local.clusters
  kubeconfig = kubeconfig.member[each.key].path
  content    = file("${local.member_dir}/hostpath-storage.yaml")
  depends_on = [wait_ready.member_node[each.key], image_mirror.lab]
}

task "wait_ready" "member_storage" {
  for_each     = local.clusters
  kind         = "deployment"
  kubeconfig   = kubeconfig.member[each.key].path
  namespace    = "kube-system"
  name         = "hostpath-provisioner"
  interval     = "1s"
  wait_timeout = "5m"
  depends_on   = [k8s_apply.member_storage[each.key]]
}

output "kubeconfigs" {
  value = { for m, k in kubeconfig.member : m => k.path }
}
