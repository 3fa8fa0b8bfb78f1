# nginx-demo.hcl — the seed's first multi-cluster workload: an nginx Deployment and a
# PropagationPolicy applied to Karmada, which puts a full copy in every member; the flow
# then waits until each member runs it. Needs flows/lab.hcl to have run.
#
#   sudo flow run flows/nginx-demo.hcl --state .flow/nginx-demo.db
#   sudo flow run flows/nginx-demo.hcl --state .flow/nginx-demo.db --var replicas=3
#   sudo flow resume --state .flow/nginx-demo.db      # after an interruption or a failure
#   docs/flows/nginx-demo.md             # variables, re-runs, removal

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Members that get nginx (joined to Karmada by flows/lab.hcl)."
}

variable "name" {
  type        = string
  default     = "nginx"
  description = "Name of the Deployment and of its PropagationPolicy."
}

variable "namespace" {
  type        = string
  default     = "default"
  description = "Namespace of both; created in Karmada (and by Karmada in the members) when not default."
}

variable "image" {
  type        = string
  default     = "docker.io/library/nginx:1.27"
  description = "nginx image; the members pull it themselves."
}

variable "replicas" {
  type        = number
  default     = 2
  description = "Replicas in each member (the policy duplicates the Deployment)."
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

locals {
  karmada_kubeconfig = "${var.karmada_data}/karmada-apiserver.config"
}

task "k8s_apply" "nginx" {
  kubeconfig = local.karmada_kubeconfig
  content = templatefile("${path.flow}/lab/nginx-demo.yaml.tftpl", {
    name      = var.name
    namespace = var.namespace
    image     = var.image
    replicas  = var.replicas
    clusters  = sort(var.members)
  })
}

# Ready = the member's own Deployment controller reports every replica available: Karmada
# created it there and the member's kubelet runs the pods.
module "nginx" {
  source     = "./modules/deployment-ready"
  members    = var.members
  name       = var.name
  namespace  = var.namespace
  config_dir = var.config_dir
  depends_on = [k8s_apply.nginx]
}

output "applied" {
  value = [for o in k8s_apply.nginx.objects : "${o.kind} ${o.namespace}/${o.name}"]
}

output "ready_in" {
  value = module.nginx.members
}
