# failover-drill.hcl — the seed's failover drill (seed 003): a Deployment placed by the
# seed's priority failover policy (static weights 1/0/0, spread over at most one cluster,
# member clusters' NotReady/unreachable taints tolerated for toleration_seconds), so all its
# replicas run in one member; that member is cordoned and given the drill's NoExecute
# taint, which the policy tolerates as long as a failing member; once the toleration is up
# Karmada evicts the replicas and they move to the other members. Then the member is
# uncordoned, its taint removed, the workload rescheduled, and its replicas come back. The
# ResourceBinding's placement is printed before, during and after.
# Needs flows/lab.hcl (or flows/k8s-lab) to have run, with the Failover feature gate on
# (flows/modules/karmada sets it).
#
#   sudo flow run flows/failover-drill.hcl --state .flow/failover-drill.db
#   sudo flow resume --state .flow/failover-drill.db  # after an interruption or a failure
#   flow run flows/failover-drill.hcl --var-file flows/k8s-lab/vars/failover-drill.hcl  # the local lab
#   docs/flows/failover-drill.md         # variables, re-runs, cleaning up
#
# Run it whole: a run stopped between drain and restore leaves the member cordoned and
# tainted until `flow resume` (or another run) restores it.

variable "weights" {
  type        = map(number)
  default     = { member1 = 1, member2 = 0, member3 = 0 }
  description = "The members the policy may place the workload in, each with its static weight: the seed's priority order 1/0/0 (a weight of 0 is left out of the policy, as Karmada wants)."
}

variable "drain" {
  type        = string
  default     = "member1"
  description = "The member drained by the drill: the one the workload runs in, the seed's primary."
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
  default     = 2
  description = "Replicas in all, in the one member the policy places them in."
}

variable "toleration_seconds" {
  type        = number
  default     = 60
  description = "How long a NotReady/unreachable (or drained) member, or an unhealthy application, is tolerated before its replicas move."
}

variable "grace_period_seconds" {
  type        = number
  default     = 120
  description = "Longest time moved replicas stay in the old member while the new ones start (purgeMode Graciously)."
}

variable "move_timeout" {
  type        = number
  default     = 60
  description = "Seconds beyond toleration_seconds the replicas may take to leave the drained member, and to come back."
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

locals {
  karmada_kubeconfig = "${var.karmada_data}/karmada-apiserver.config"
  members            = toset(keys(var.weights))
  # Indexing weights fails validation, naming drain, when it is not one of the members.
  drained = var.weights[var.drain] >= 0 ? var.drain : var.drain
  # Karmada names a workload's ResourceBinding NAME-KIND.
  binding    = "${var.name}-deployment"
  scripts    = "${path.flow}/lab"
  script_env = { KARMADACTL = var.karmadactl_path }
  move_wait  = "${var.toleration_seconds + var.move_timeout}s"
}

# --- the workload, in the primary member ----------------------------------------------------

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
    taint_key            = var.taint_key
  })
}

task "wait_ready" "before" {
  description       = "The replicas are placed in the member to drain."
  kind              = "karmada_placement"
  kubeconfig        = local.karmada_kubeconfig
  namespace         = var.namespace
  name              = local.binding
  placement_present = [local.drained]
  wait_timeout      = "2m"
  depends_on        = [k8s_apply.workload]
}

task "wait_ready" "running_before" {
  kind         = "deployment"
  kubeconfig   = "${var.config_dir}/${local.drained}.config"
  namespace    = var.namespace
  name         = var.name
  interval     = "2s"
  wait_timeout = "5m"
  depends_on   = [wait_ready.before]
}

# --- drain it: the replicas move once the toleration is up ----------------------------------

task "exec" "drain" {
  command    = ["sh", "${local.scripts}/drill-cluster.sh", "drain", local.drained, local.karmada_kubeconfig, var.taint_key]
  env        = local.script_env
  depends_on = [wait_ready.running_before]
}

task "wait_ready" "moved_off" {
  description      = "Karmada evicts the replicas from the drained member once its taint's toleration is up."
  kind             = "karmada_placement"
  kubeconfig       = local.karmada_kubeconfig
  namespace        = var.namespace
  name             = local.binding
  placement_absent = [local.drained]
  interval         = "2s"
  wait_timeout     = local.move_wait
  depends_on       = [exec.drain]
}

# --- restore it and reschedule: the replicas come back ----------------------------------------

task "exec" "restore" {
  command    = ["sh", "${local.scripts}/drill-cluster.sh", "restore", local.drained, local.karmada_kubeconfig, var.taint_key]
  env        = local.script_env
  depends_on = [wait_ready.moved_off]
}

task "wait_ready" "cluster_ready" {
  kind         = "karmada_clusters"
  kubeconfig   = local.karmada_kubeconfig
  clusters     = [local.drained]
  wait_timeout = "2m"
  depends_on   = [exec.restore]
}

# Replicas do not return by themselves: Karmada keeps a placement that still works. A
# WorkloadRebalancer asks for a fresh one, in which the primary member wins again.
task "k8s_apply" "rebalance" {
  kubeconfig = local.karmada_kubeconfig
  content = templatefile("${local.scripts}/workload-rebalancer.yaml.tftpl", {
    name      = "${var.name}-rebalance"
    workload  = var.name
    namespace = var.namespace
  })
  depends_on = [wait_ready.cluster_ready]
}

task "wait_ready" "moved_back" {
  kind              = "karmada_placement"
  kubeconfig        = local.karmada_kubeconfig
  namespace         = var.namespace
  name              = local.binding
  placement_present = [local.drained]
  interval          = "2s"
  wait_timeout      = local.move_wait
  depends_on        = [k8s_apply.rebalance]
}

task "wait_ready" "running_after" {
  kind         = "deployment"
  kubeconfig   = "${var.config_dir}/${local.drained}.config"
  namespace    = var.namespace
  name         = var.name
  interval     = "2s"
  wait_timeout = "5m"
  depends_on   = [wait_ready.moved_back]
}

output "placement_before" {
  description = "The ResourceBinding's placement before the drill: replicas by member."
  value       = wait_ready.before.placement
}

output "placement_during" {
  description = "Its placement once the replicas left the drained member."
  value       = wait_ready.moved_off.placement
}

output "placement_after" {
  description = "Its placement after the member was restored and the workload rescheduled."
  value       = wait_ready.moved_back.placement
}

output "moved_off_after" {
  description = "How long after the drain the replicas had left the member (toleration_seconds, then Karmada's eviction)."
  value       = wait_ready.moved_off.elapsed
}
