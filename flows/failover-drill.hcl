# failover-drill.hcl — the seed's failover drill: a Deployment divided among the members by
# the seed's Weighted failover policy, then one member is drained (cordoned and tainted
# NoExecute) and the flow waits until Karmada has moved its replicas to the others; then
# the member is restored, the workload is rebalanced onto it again and the flow waits until
# every member runs its share. Needs flows/lab.hcl to have run.
#
#   sudo flow run flows/failover-drill.hcl --state .flow/failover-drill.db
#   sudo flow run flows/failover-drill.hcl --state .flow/failover-drill.db --var drain=member3
#   sudo flow resume --state .flow/failover-drill.db  # after an interruption or a failure
#   docs/flows/failover-drill.md         # variables, re-runs, cleaning up
#
# Run it whole: a run stopped between drain and restore leaves the member cordoned and
# tainted until `flow resume` (or another run) restores it.

variable "weights" {
  type        = map(number)
  default     = { member1 = 1, member2 = 1, member3 = 1 }
  description = "Members the workload is divided among, each with its static weight."
}

variable "drain" {
  type        = string
  default     = "member2"
  description = "The member drained by the drill; one of the keys of weights."
}

variable "name" {
  type        = string
  default     = "failover-drill"
  description = "Name of the Deployment and of its PropagationPolicy."
}

variable "namespace" {
  type    = string
  default = "default"
}

variable "image" {
  type    = string
  default = "docker.io/library/nginx:1.27"
}

variable "replicas" {
  type        = number
  default     = 6
  description = "Replicas in all, divided among the members by weight."
}

variable "toleration_seconds" {
  type        = number
  default     = 60
  description = "How long a NotReady/unreachable member, or an unhealthy application, is tolerated before its replicas move."
}

variable "grace_period_seconds" {
  type        = number
  default     = 120
  description = "Longest time moved replicas stay in the old member while the new ones start (purgeMode Graciously)."
}

variable "move_timeout" {
  type        = number
  default     = 300
  description = "Seconds to wait for the replicas to leave the drained member, and to come back."
}

variable "taint_key" {
  type        = string
  default     = "flow.dev/failover-drill"
  description = "Key of the NoExecute taint the drill puts on the drained member."
}

variable "karmada_data" {
  type        = string
  default     = "/etc/karmada"
  description = "karmadactl init's data directory (flows/lab.hcl's karmada_data)."
}

variable "config_dir" {
  type        = string
  default     = "/root"
  description = "Where flows/lab.hcl wrote the members' kubeconfigs, as MEMBER.config."
}

variable "karmadactl_path" {
  type    = string
  default = "/usr/local/bin/karmadactl"
}

variable "kubectl" {
  type        = string
  default     = "microk8s kubectl"
  description = "kubectl command line for the polling script; the host MicroK8s's kubectl by default."
}

locals {
  karmada_kubeconfig = "${var.karmada_data}/karmada-apiserver.config"
  members            = toset(keys(var.weights))
  # Indexing weights fails validation, naming drain, when it is not one of the members.
  drained   = var.weights[var.drain] > 0 ? var.drain : var.drain
  remaining = setsubtract(local.members, [local.drained])
  # Karmada names a workload's ResourceBinding NAME-KIND.
  binding = "${var.name}-deployment"
  scripts = "${path.flow}/lab"
  script_env = {
    KARMADACTL = var.karmadactl_path
    KUBECTL    = var.kubectl
  }
}

# --- the workload, spread by weight --------------------------------------------------------

task "k8s_apply" "workload" {
  kubeconfig = local.karmada_kubeconfig
  content = templatefile("${local.scripts}/failover-drill.yaml.tftpl", {
    name                 = var.name
    namespace            = var.namespace
    image                = var.image
    replicas             = var.replicas
    weights              = var.weights
    toleration_seconds   = var.toleration_seconds
    grace_period_seconds = var.grace_period_seconds
  })
}

task "wait_ready" "scheduled" {
  kind         = "condition"
  kubeconfig   = local.karmada_kubeconfig
  api_version  = "work.karmada.io/v1alpha2"
  object_kind  = "ResourceBinding"
  namespace    = var.namespace
  name         = local.binding
  condition    = "Scheduled"
  wait_timeout = "2m"
  depends_on   = [k8s_apply.workload]
}

module "before" {
  source     = "./modules/deployment-ready"
  members    = local.members
  name       = var.name
  namespace  = var.namespace
  config_dir = var.config_dir
  depends_on = [wait_ready.scheduled]
}

# --- drain one member, wait for its replicas to move ------------------------------------------

task "exec" "drain" {
  command    = ["sh", "${local.scripts}/drill-cluster.sh", "drain", local.drained, local.karmada_kubeconfig, var.taint_key]
  env        = local.script_env
  depends_on = [module.before]
}

# Not a wait_ready: the binding's Scheduled condition stays True while its list of clusters
# changes, so the script polls the list itself (see flows/lab/wait-binding.sh).
task "exec" "moved_off" {
  command    = ["sh", "${local.scripts}/wait-binding.sh", local.karmada_kubeconfig, var.namespace, local.binding, local.drained, "absent", tostring(var.move_timeout)]
  env        = local.script_env
  timeout    = "${var.move_timeout + 60}s"
  depends_on = [exec.drain]
}

module "during" {
  source     = "./modules/deployment-ready"
  members    = local.remaining
  name       = var.name
  namespace  = var.namespace
  config_dir = var.config_dir
  depends_on = [exec.moved_off]
}

# --- restore it, rebalance, wait until every member runs its share again ------------------

task "exec" "restore" {
  command    = ["sh", "${local.scripts}/drill-cluster.sh", "restore", local.drained, local.karmada_kubeconfig, var.taint_key]
  env        = local.script_env
  depends_on = [module.during]
}

task "wait_ready" "cluster_ready" {
  kind         = "karmada_clusters"
  kubeconfig   = local.karmada_kubeconfig
  clusters     = [local.drained]
  wait_timeout = "2m"
  depends_on   = [exec.restore]
}

# Replicas do not return by themselves: Karmada reschedules a Divided workload only when it
# changes. A WorkloadRebalancer asks for a fresh division over the members allowed now.
task "k8s_apply" "rebalance" {
  kubeconfig = local.karmada_kubeconfig
  content = templatefile("${local.scripts}/workload-rebalancer.yaml.tftpl", {
    name      = "${var.name}-rebalance"
    workload  = var.name
    namespace = var.namespace
  })
  depends_on = [wait_ready.cluster_ready]
}

task "exec" "moved_back" {
  command    = ["sh", "${local.scripts}/wait-binding.sh", local.karmada_kubeconfig, var.namespace, local.binding, local.drained, "present", tostring(var.move_timeout)]
  env        = local.script_env
  timeout    = "${var.move_timeout + 60}s"
  depends_on = [k8s_apply.rebalance]
}

module "after" {
  source     = "./modules/deployment-ready"
  members    = local.members
  name       = var.name
  namespace  = var.namespace
  config_dir = var.config_dir
  depends_on = [exec.moved_back]
}

output "moved_off" {
  value = exec.moved_off.stdout
}

output "moved_back" {
  value = exec.moved_back.stdout
}
