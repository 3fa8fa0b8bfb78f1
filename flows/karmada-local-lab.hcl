# karmada-local-lab.hcl — the seed's Karmada "cluster of clusters", for real, on one box with
# no kubelets, snap or internet. It is the local lab (flows/local-lab.hcl: busybox members in
# LXD with no network device, reached only through proxy devices on 127.0.0.1:16441/16442/16444)
# with Kubernetes in it:
#   - each member container runs etcd, a real kube-apiserver on 127.0.0.1:16443 inside and
#     kube-controller-manager; its kubeconfig is extracted and rewritten to the forwarded port,
#     exactly as flows/lab.hcl does with `microk8s config`;
#   - the Karmada control plane runs as host processes started by `process` tasks: etcd, a
#     karmada-apiserver (a kube-apiserver plus Karmada's CRDs), karmada-webhook,
#     karmada-controller-manager and karmada-scheduler;
#   - real `karmadactl join` of the three members, then nginx with a PropagationPolicy applied
#     to Karmada appears in every member's API server.
# What differs from the real lab (docs/karmada-local-lab.md): `karmadactl init` deploys pods and
# needs kubelets, so the control plane is started by this flow's own tasks; and the Cluster API
# (clusters.cluster.karmada.io), normally served by karmada-aggregated-apiserver through a
# Service, comes from a minimal CRD, because a Service cannot point at 127.0.0.1.
#
#   make lab-setup && scripts/k8s-bins.sh      # once: LXD, etcd, and the binaries (minutes)
#   flow run flows/karmada-local-lab.hcl       # kill it at any point, then: flow resume
#   flow destroy                               # removes everything it created but the image

variable "members" {
  type        = map(number)
  default     = { member1 = 16441, member2 = 16442, member3 = 16444 }
  description = "Member container names and the host port forwarded to each one's API server (16443 inside)."
}

variable "config_dir" {
  type        = string
  default     = ""
  description = "Where memberN.config and karmada-apiserver.config are written, with the control plane's data; default .lab/karmada in the repository."
}

variable "image_alias" {
  type        = string
  default     = "flow-lab-busybox"
  description = "Alias of the busybox image the members are launched from (shared with the local lab)."
}

variable "kube_version" {
  type        = string
  default     = "v1.31.4"
  description = "Version of kube-apiserver and kube-controller-manager (built by scripts/k8s-bins.sh)."
}

variable "karmada_version" {
  type        = string
  default     = "v1.13.0"
  description = "Version of karmadactl and the Karmada components (built by scripts/k8s-bins.sh)."
}

locals {
  root       = dirname(path.flow)
  lab        = "${path.flow}/karmada-local-lab"
  config_dir = var.config_dir != "" ? var.config_dir : "${local.root}/.lab/karmada"
  run_dir    = "${local.config_dir}/run"
  # Host ports of the control plane; all on 127.0.0.1.
  ports = {
    etcd_client    = 2479, etcd_peer = 2480, apiserver = 5443, webhook = 18443,
    webhook_health = 18000, controller_manager_health = 18357, scheduler_health = 18351,
  }
  karmada_server = "https://127.0.0.1:${local.ports.apiserver}"
}

# --- binaries ------------------------------------------------------------------------------

task "exec" "bins" {
  description = "Build kube and Karmada binaries once per version (cached; a no-op when present)."
  command     = ["bash", "scripts/k8s-bins.sh"]
  env         = { K8S_VERSION = var.kube_version, KARMADA_VERSION = var.karmada_version }
  dir         = local.root
  timeout     = "40m"
}

# --- members: etcd + kube-apiserver + kube-controller-manager in each container ------------

task "exec" "busybox_image" {
  command = ["bash", "scripts/busybox-image.sh"]
  dir     = local.root
}

task "preflight" "lab" {
  description      = "Before anything is created: LXD, the host ports (free or already the lab's), disk, memory."
  ports            = concat(values(var.members), values(local.ports))
  instances        = keys(var.members)
  pid_files        = [for c in ["etcd", "karmada-apiserver", "karmada-webhook", "karmada-controller-manager", "karmada-scheduler"] : "${local.run_dir}/${c}.pid"]
  min_free_disk_mb = 2048
  min_memory_mb    = 1024
}

task "lxd_image_import" "busybox" {
  file       = "${local.root}/${exec.busybox_image.stdout}"
  alias      = var.image_alias
  depends_on = [preflight.lab]
  # A cache the other labs share: flow destroy leaves it.
  retain_on_destroy = true
}

# Everything the lab writes on this machine is under config_dir (kubeconfigs, credentials,
# the control plane's data, pid files and logs), so flow destroy removes it last, after
# the processes and members that used it.
task "exec" "config_dir" {
  description = "Create the lab's config directory; flow destroy removes it and all in it."
  command     = ["mkdir", "-p", local.run_dir]
  undo        = "rm -rf '${local.config_dir}'"
  depends_on  = [preflight.lab]
}

task "lxd_profile" "karmada_lab" {
  depends_on          = [exec.config_dir]
  name                = "flow-karmada-lab"
  profile_description = "flow Karmada local lab: members with an API server and no network device"
  config              = { "limits.memory" = "1GiB", "limits.processes" = "500" }
}

task "exec" "stage_k8s" {
  description = "Stage etcd, kube-apiserver and kube-controller-manager for the members (mounted read-only)."
  command     = ["sh", "${local.lab}/stage-k8s.sh", exec.bins.stdout, var.kube_version, "${local.root}/.lab/k8s-root"]
}

task "lxd_launch" "member" {
  for_each = var.members
  name     = each.key
  image    = lxd_image_import.busybox.alias
  profiles = ["default", lxd_profile.karmada_lab.name]
  devices  = { k8s = { type = "disk", source = exec.stage_k8s.stdout, path = "/opt/k8s", readonly = "true" } }
  wait_for = ["true"]
}

task "exec" "member_creds" {
  for_each   = var.members
  command    = ["sh", "${local.lab}/creds.sh", "${local.config_dir}/members/${each.key}"]
  depends_on = [exec.config_dir]
}

task "lxd_file_push" "member_creds" {
  for_each    = var.members
  instance    = lxd_launch.member[each.key].name
  source      = exec.member_creds[each.key].stdout
  destination = "/var/lib/k8s/creds"
  mode        = "0600"
  create_dirs = true
}

task "lxd_exec" "start_member" {
  for_each   = var.members
  instance   = lxd_launch.member[each.key].name
  command    = ["sh", "/opt/k8s/start-member.sh"]
  depends_on = [lxd_file_push.member_creds[each.key]]
}

task "proxy_device" "api" {
  for_each   = var.members
  instance   = lxd_launch.member[each.key].name
  name       = "api"
  listen     = "tcp:127.0.0.1:${each.value}"
  connect    = "tcp:127.0.0.1:16443"
  depends_on = [lxd_exec.start_member[each.key]]
}

# As `microk8s config` in the real lab: the member's own kubeconfig, printed inside, rewritten
# to the forwarded port on the host. It holds the admin token, so it is never shown.
task "lxd_exec" "member_config" {
  for_each         = var.members
  instance         = lxd_launch.member[each.key].name
  command          = ["sh", "/opt/k8s/member-config.sh", each.key]
  sensitive_stdout = true
  depends_on       = [lxd_exec.start_member[each.key]]
}

task "kubeconfig" "member" {
  for_each     = var.members
  content      = lxd_exec.member_config[each.key].stdout
  server       = "https://${proxy_device.api[each.key].address}"
  context_name = each.key
  path         = "${local.config_dir}/${each.key}.config"
}

task "wait_ready" "member_api" {
  for_each     = var.members
  kind         = "kube_api"
  kubeconfig   = kubeconfig.member[each.key].path
  wait_timeout = "3m"
}

# --- the Karmada control plane as host processes --------------------------------------------

task "exec" "karmada_creds" {
  command    = ["sh", "${local.lab}/creds.sh", "${local.config_dir}/karmada-apiserver/creds"]
  depends_on = [exec.config_dir]
}

task "process" "karmada_etcd" {
  command = ["etcd", "--name", "karmada", "--data-dir", "${local.config_dir}/etcd",
    "--listen-client-urls", "http://127.0.0.1:${local.ports.etcd_client}",
    "--advertise-client-urls", "http://127.0.0.1:${local.ports.etcd_client}",
    "--listen-peer-urls", "http://127.0.0.1:${local.ports.etcd_peer}",
    "--initial-advertise-peer-urls", "http://127.0.0.1:${local.ports.etcd_peer}",
  "--initial-cluster", "karmada=http://127.0.0.1:${local.ports.etcd_peer}"]
  pid_file   = "${local.run_dir}/etcd.pid"
  log_file   = "${local.run_dir}/etcd.log"
  ready_url  = "http://127.0.0.1:${local.ports.etcd_client}/health"
  depends_on = [exec.config_dir]
}

task "process" "karmada_apiserver" {
  command = ["${exec.bins.stdout}/kube-apiserver-${var.kube_version}", "--advertise-address=127.0.0.1", "--bind-address=127.0.0.1",
    "--secure-port=${local.ports.apiserver}", "--etcd-servers=http://127.0.0.1:${local.ports.etcd_client}",
    "--cert-dir=${local.config_dir}/karmada-apiserver/certs",
    "--token-auth-file=${exec.karmada_creds.stdout}/tokens.csv",
    "--service-account-issuer=https://kubernetes.default.svc",
    "--service-account-key-file=${exec.karmada_creds.stdout}/sa.pub",
    "--service-account-signing-key-file=${exec.karmada_creds.stdout}/sa.key",
  "--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/16"]
  pid_file      = "${local.run_dir}/karmada-apiserver.pid"
  log_file      = "${local.run_dir}/karmada-apiserver.log"
  ready_url     = "${local.karmada_server}/readyz"
  insecure      = true # only the readiness probe; the kubeconfig below pins the certificate
  ready_timeout = "2m"
  depends_on    = [process.karmada_etcd]
}

task "exec" "karmada_config" {
  command          = ["sh", "${local.lab}/karmada-config.sh", tostring(local.ports.apiserver), "${local.config_dir}/karmada-apiserver/certs", exec.karmada_creds.stdout]
  sensitive_stdout = true
  depends_on       = [process.karmada_apiserver]
}

task "kubeconfig" "karmada" {
  content = exec.karmada_config.stdout
  path    = "${local.config_dir}/karmada-apiserver.config"
}

task "k8s_apply" "karmada_crds" {
  kubeconfig = kubeconfig.karmada.path
  files = concat(
    [for d in ["apps", "autoscaling", "config", "multicluster", "networking", "policy", "remedy", "work"] : "${exec.bins.stdout}/karmada-crds-${var.karmada_version}/${d}"],
    ["${local.lab}/cluster-crd.yaml"],
  )
}

task "exec" "webhook_pki" {
  command    = ["sh", "${local.lab}/webhook-pki.sh", "${local.config_dir}/karmada-webhook"]
  depends_on = [exec.config_dir]
}

task "process" "karmada_webhook" {
  command = ["${exec.bins.stdout}/karmada-webhook-${var.karmada_version}", "--kubeconfig=${kubeconfig.karmada.path}",
    "--bind-address=127.0.0.1", "--secure-port=${local.ports.webhook}", "--cert-dir=${exec.webhook_pki.stdout}",
  "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:${local.ports.webhook_health}"]
  pid_file   = "${local.run_dir}/karmada-webhook.pid"
  log_file   = "${local.run_dir}/karmada-webhook.log"
  ready_tcp  = "127.0.0.1:${local.ports.webhook}" # karmada-webhook registers no health checks
  depends_on = [k8s_apply.karmada_crds]
}

task "k8s_apply" "webhook_configuration" {
  kubeconfig = kubeconfig.karmada.path
  content = templatefile("${local.lab}/webhook-configuration.yaml.tpl", {
    url       = "https://127.0.0.1:${local.ports.webhook}"
    ca_bundle = base64encode(file("${exec.webhook_pki.stdout}/ca.crt"))
  })
  depends_on = [process.karmada_webhook]
}

task "process" "karmada_controller_manager" {
  command = ["${exec.bins.stdout}/karmada-controller-manager-${var.karmada_version}", "--kubeconfig=${kubeconfig.karmada.path}",
    "--leader-elect=false", "--metrics-bind-address=0",
  "--health-probe-bind-address=127.0.0.1:${local.ports.controller_manager_health}"]
  pid_file   = "${local.run_dir}/karmada-controller-manager.pid"
  log_file   = "${local.run_dir}/karmada-controller-manager.log"
  ready_url  = "http://127.0.0.1:${local.ports.controller_manager_health}/healthz"
  depends_on = [k8s_apply.webhook_configuration]
}

task "process" "karmada_scheduler" {
  command = ["${exec.bins.stdout}/karmada-scheduler-${var.karmada_version}", "--kubeconfig=${kubeconfig.karmada.path}",
    "--leader-elect=false", "--metrics-bind-address=0",
  "--health-probe-bind-address=127.0.0.1:${local.ports.scheduler_health}"]
  pid_file   = "${local.run_dir}/karmada-scheduler.pid"
  log_file   = "${local.run_dir}/karmada-scheduler.log"
  ready_url  = "http://127.0.0.1:${local.ports.scheduler_health}/healthz"
  depends_on = [k8s_apply.webhook_configuration]
}

# --- join the members, then propagate nginx --------------------------------------------------

task "karmadactl_join" "member" {
  for_each           = var.members
  karmadactl         = "${exec.bins.stdout}/karmadactl-${var.karmada_version}"
  karmadactl_version = var.karmada_version
  cluster            = each.key
  kubeconfig         = kubeconfig.karmada.path
  cluster_kubeconfig = kubeconfig.member[each.key].path
  depends_on         = [wait_ready.member_api[each.key], process.karmada_controller_manager]
  # flow destroy does not unjoin: unjoin waits for the Cluster's execution namespace to be
  # deleted, which needs a namespace controller this lab's Karmada does not run; the
  # Clusters go with Karmada's etcd data, which destroy removes.
  retain_on_destroy = true
}

task "wait_ready" "clusters" {
  kind         = "karmada_clusters"
  kubeconfig   = kubeconfig.karmada.path
  clusters     = [for m, j in karmadactl_join.member : j.cluster]
  wait_timeout = "3m"
}

task "k8s_apply" "nginx" {
  kubeconfig = kubeconfig.karmada.path
  content    = templatefile("${local.lab}/nginx.yaml.tpl", { clusters = keys(var.members) })
  depends_on = [wait_ready.clusters, process.karmada_scheduler]
}

# Members have no kubelet: the Deployment never becomes available, but its own controller
# marks it Progressing once Karmada created it there.
task "wait_ready" "nginx" {
  for_each     = var.members
  kind         = "condition"
  kubeconfig   = kubeconfig.member[each.key].path
  api_version  = "apps/v1"
  object_kind  = "Deployment"
  namespace    = "default"
  name         = "nginx"
  condition    = "Progressing"
  wait_timeout = "3m"
  depends_on   = [k8s_apply.nginx]
}

output "kubeconfigs" {
  value = merge({ for m, k in kubeconfig.member : m => k.path }, { karmada = kubeconfig.karmada.path })
}

output "clusters" {
  value = wait_ready.clusters.clusters
}
