# bins.hcl — what the lab builds on this machine before it can run anything, each piece a
# task of its own so the engine orders and overlaps them: the host packages the builds use,
# the Go modules (downloads), and each Kubernetes, Karmada and CoreDNS binary, built by
# scripts/k8s-bins.sh once per version into ~/.cache/flow/bin ($FLOW_BIN_CACHE), each
# printing its path. An image or the member image starts as soon as its own binaries
# exist; while one family compiles, the others download and the Debian roots are built.
#
# One file of the flows/k8s-lab flow: it uses var.kube_version, var.karmada_version,
# var.image_coredns_version, var.metrics_server, local.metrics_server_version (metrics.hcl)
# and local.root; what it declares is read by images.hcl, members.hcl and karmada.hcl.

locals {
  kube_bins = ["kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet"]
  # The addons the lab enables (addons.hcl) are built only when it enables them.
  karmada_bins = concat(["karmadactl", "karmada-controller-manager", "karmada-scheduler", "karmada-webhook", "karmada-aggregated-apiserver", "karmada-agent", "karmada-crds"], var.karmada_addons)
  bins_env = {
    K8S_VERSION     = var.kube_version
    KARMADA_VERSION = var.karmada_version
    COREDNS_VERSION = var.image_coredns_version
  }
}

# The one place the lab installs host packages: every task that needs one depends on it.
# scripts/apt-install.sh waits for apt's locks (the user's own apt, too) instead of failing.
task "exec" "host_packages" {
  description = "Install the host packages the lab uses (mmdebstrap, busybox-static, docker-registry, and kubectl for you); a no-op when present."
  script      = <<-EOT
    set -e
    pkgs="mmdebstrap busybox-static docker-registry"
    # A kubectl the machine already has (another package's) is kept: kubernetes-client
    # would conflict with it over /usr/bin/kubectl.
    command -v kubectl >/dev/null || pkgs="$pkgs kubernetes-client"
    bash scripts/apt-install.sh $pkgs
  EOT
  dir         = local.root
  timeout     = "20m"
}

task "exec" "go_module" {
  for_each    = toset(["kubernetes", "karmada", "coredns"])
  description = "Resolve and download a family's Go modules from the module proxy (cached by what the module holds)."
  command     = ["bash", "scripts/k8s-bins.sh", "module", each.key]
  env         = local.bins_env
  dir         = local.root
  timeout     = "30m"
  retry {
    attempts = 3
    delay    = "10s"
  }
}

# One build of a family at a time: two would compile the packages they share twice on
# the same cores. The families build side by side.
task "exec" "kube_bin" {
  for_each     = toset(local.kube_bins)
  description  = "Build one Kubernetes binary once per version (cached; a no-op when present)."
  command      = ["bash", "scripts/k8s-bins.sh", "build", each.key]
  env          = local.bins_env
  dir          = local.root
  timeout      = "40m"
  max_parallel = 1
  depends_on   = [exec.go_module["kubernetes"]]
}

task "exec" "karmada_bin" {
  for_each     = toset(local.karmada_bins)
  description  = "Build one Karmada binary (or pack its CRDs) once per version (cached; a no-op when present)."
  command      = ["bash", "scripts/k8s-bins.sh", "build", each.key]
  env          = local.bins_env
  dir          = local.root
  timeout      = "40m"
  max_parallel = 1
  depends_on   = [exec.go_module["karmada"]]
}

task "exec" "coredns_bin" {
  description = "Build CoreDNS with the plugins the members' Corefile uses, once per version and plugin list."
  command     = ["bash", "scripts/k8s-bins.sh", "build", "coredns"]
  env         = local.bins_env
  dir         = local.root
  timeout     = "40m"
  depends_on  = [exec.go_module["coredns"]]
}

# metrics-server, only under var.metrics_server (metrics.hcl): a family of its own, so it
# builds beside the others; its module is resolved by the build itself.
task "exec" "metrics_server_bin" {
  for_each    = var.metrics_server ? toset(["metrics-server"]) : toset([])
  description = "Build metrics-server from its module, once per version (cached; a no-op when present)."
  command     = ["bash", "scripts/k8s-bins.sh", "build", each.key]
  env         = { METRICS_SERVER_VERSION = local.metrics_server_version }
  dir         = local.root
  timeout     = "40m"
  retry {
    attempts = 2
    delay    = "10s"
  }
}

task "exec" "hostpath_bin" {
  description = "Build the lab's hostpath provisioner (flows/k8s-lab/hostpath), once per source."
  command     = ["bash", "scripts/k8s-bins.sh", "build", "hostpath-provisioner"]
  dir         = local.root
  timeout     = "30m"
}
