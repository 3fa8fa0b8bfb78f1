# addons.hcl — Karmada's addons on the lab, each enabled by `karmadactl addons enable`
# (task karmada_addon) with its image built here from the Karmada module at the lab's
# version (bins.hcl, images.hcl): karmada-search, karmada-descheduler,
# karmada-scheduler-estimator (one per member, push and pull) and karmada-metrics-adapter.
# None in the plain lab; vars/karmada-e2e.hcl enables all four, as upstream's e2e setup
# does. flow destroy disables them.
#
# The addons dial members at the Clusters' spec.apiEndpoint, https://ADDRESS:PORT, which
# only the host cluster's node serves (proxy_device.to_member, karmada.hcl); a pod's
# ADDRESS:PORT is its own loopback. So each addon pod gets a sidecar that forwards its
# loopback ADDRESS:PORT to the node's bridge at the same port (loopback_forwards), and TLS
# still sees the address the member's certificate names. The pods keep their own network:
# on the node's network their metrics and serving ports would collide with the components
# already there.
#
# One file of the flows/k8s-lab flow: it uses var.members, var.karmada_version,
# var.registry_port, local.bridge, local.address_of, local.clusters and module.karmada.

variable "karmada_addons" {
  type        = list(string)
  default     = []
  description = "Karmada addons the lab enables: any of karmada-search, karmada-descheduler, karmada-scheduler-estimator (one per member), karmada-metrics-adapter. vars/karmada-e2e.hcl enables all four."
}

locals {
  # An estimator per member, the others once.
  addon_instances = merge(
    { for a in var.karmada_addons : a => { addon = a, cluster = "" } if a != "karmada-scheduler-estimator" },
    { for m, _ in(contains(var.karmada_addons, "karmada-scheduler-estimator") ? var.members : {}) :
    "karmada-scheduler-estimator-${m}" => { addon = "karmada-scheduler-estimator", cluster = m } },
  )
  # ADDRESS:PORT of every member, as the Clusters name them, to the host cluster node's
  # forward of it (proxy_device.to_member listens on all of the node's addresses).
  addon_forwards = { for m, p in var.members : "${local.address_of[m]}:${p}" => "${local.bridge}:${p}" }
}

task "karmada_addon" "lab" {
  for_each           = local.addon_instances
  description        = "Enable a Karmada addon with its image from the lab registry; its pods reach the members through a loopback forwarding sidecar."
  karmadactl         = exec.karmada_bin["karmadactl"].stdout
  karmadactl_version = var.karmada_version
  addon              = each.value.addon
  image              = "localhost:${var.registry_port}/${each.value.addon}:${var.karmada_version}"
  kubeconfig         = kubeconfig.member[var.host_cluster].path
  karmada_kubeconfig = module.karmada.kubeconfig
  cluster            = each.value.cluster
  member_kubeconfig  = lookup({ for m, k in kubeconfig.member : m => k.path }, each.value.cluster, "")
  loopback_forwards  = local.addon_forwards
  forwarder_image    = "localhost:${var.registry_port}/socat:${var.image_socat_tag}"
  timeout            = "10m"
  depends_on         = [image_mirror.lab]
}

output "karmada_addons" {
  description = "Each enabled addon's Deployment in the host cluster."
  value       = sort([for k, a in karmada_addon.lab : a.deployment])
}
