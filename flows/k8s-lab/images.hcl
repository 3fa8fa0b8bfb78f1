# images.hcl — every container image the k8s lab runs, built here from what this machine
# has (nothing can be pulled from the internet): the Kubernetes and Karmada binaries built
# from the Go module proxy by the tasks of bins.hcl, our own pause (flows/k8s-lab/pause), CoreDNS,
# and Debian packages installed into root file systems by scripts/debian-rootfs.sh
# (mmdebstrap). Each image is pushed to the stand-in upstream registry under its real
# repository path and tag, then image_mirror preloads all of them into the lab registry
# with the seed's "flatten" naming. What each image holds, and where it differs from the
# real one: docs/k8s-lab-images.md.
#
# One file of the flows/k8s-lab flow: it uses var.upstream_port, var.registry_port,
# var.karmada_version, var.kube_version, var.metrics_server, local.metrics_server_version,
# local.root and module.registries (the registries) from the flow's other files; everything
# it declares is named image_*.

variable "image_coredns_version" {
  type        = string
  default     = "v1.11.3"
  description = "CoreDNS module version; the image is tagged without the v, as coredns/coredns is."
}

variable "image_etcd_tag" {
  type        = string
  default     = "3.5.16-0"
  description = "Tag of the etcd image (karmadactl v1.13.0's default); it holds Debian's etcd 3.4."
}

variable "image_nginx_tag" {
  type        = string
  default     = "1.27"
  description = "Tag of library/nginx (flows/nginx-demo.hcl's default); it holds Debian's nginx-light 1.22."
}

variable "image_socat_tag" {
  type        = string
  default     = "1.7.4"
  description = "Tag of the lab's socat image (Debian's socat), the loopback forwarder of the Karmada addons' pods (addons.hcl); built only when the lab enables an addon."
}

variable "image_prometheus_tag" {
  type        = string
  default     = "v2.53.3"
  description = "Tag of prom/prometheus (flows/monitoring.hcl's default); it holds Debian's prometheus 2.42."
}

locals {
  # Debian root file systems (bookworm, minbase), one per package list, cached by it.
  image_rootfs = {
    etcd       = ["ca-certificates", "etcd-client", "etcd-server"]
    nginx      = ["nginx-light"]
    prometheus = ["prometheus"]
    python     = ["python-is-python3", "python3-flask"]
    kube_proxy = ["conntrack", "iptables"]
  }
  # Images only the Karmada addons (addons.hcl) need.
  image_rootfs_addons = length(var.karmada_addons) == 0 ? {} : { socat = ["socat"] }

  # Binary name => upstream repository path and tag. Kubernetes binaries go where the real
  # images have them (/usr/local/bin, on PATH: karmadactl init runs "kube-apiserver"),
  # Karmada's at /bin (karmadactl init runs "/bin/karmada-controller-manager").
  image_kube = {
    for c in ["kube-apiserver", "kube-controller-manager", "kube-scheduler"] : c => "${c}:${var.kube_version}"
  }
  image_karmada = {
    for c in ["karmada-controller-manager", "karmada-scheduler", "karmada-webhook", "karmada-aggregated-apiserver", "karmada-agent"] :
    c => "karmada/${c}:${var.karmada_version}"
  }
  image_karmada_addons = { for c in var.karmada_addons : c => "karmada/${c}:${var.karmada_version}" }
  image_coredns_tag    = trimprefix(var.image_coredns_version, "v")
  # Only under var.metrics_server (metrics.hcl), at registry.k8s.io's path.
  image_metrics_server = var.metrics_server ? { "metrics-server" = "metrics-server/metrics-server:${local.metrics_server_version}" } : {}
  image_path = {
    debian     = "library/debian:bookworm"
    alpine     = "library/alpine:3.21.0"
    pause      = "pause:3.6"
    kube_proxy = "kube-proxy:${var.kube_version}"
    etcd       = "etcd:${var.image_etcd_tag}"
    coredns    = "coredns/coredns:${local.image_coredns_tag}"
    nginx      = "library/nginx:${var.image_nginx_tag}"
    prometheus = "prom/prometheus:${var.image_prometheus_tag}"
    python     = "library/python:3.11-slim"
    hostpath   = "cdkbot/hostpath-provisioner:1.5.0"
    socat      = "flowlab/socat:${var.image_socat_tag}"
  }
  image_path_env = { PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" }
}

# --- inputs: root file systems, binaries, links ---------------------------------------------

# The base root comes first: it fills the download cache the other roots share
# (scripts/debian-rootfs.sh), so the Debian packages they have in common are downloaded once.
task "exec" "image_rootfs_base" {
  description = "The images' base: Debian minbase with CA certificates, gzipped into .lab/images; seeds the download cache."
  command     = ["bash", "scripts/image-rootfs.sh", "base", "ca-certificates"]
  dir         = local.root
  timeout     = "20m"
  depends_on  = [exec.host_packages]
}

# Gzipped once here (gzip -n: no name or time inside, so the same tar gives the same
# bytes): image_build then takes the layer's digest by hashing the file instead of
# compressing hundreds of megabytes at every run.
task "exec" "image_rootfs" {
  for_each    = merge(local.image_rootfs, local.image_rootfs_addons)
  description = "A Debian root file system with the image's packages (cached by package list), gzipped into .lab/images."
  command     = concat(["bash", "scripts/image-rootfs.sh", each.key], each.value)
  dir         = local.root
  timeout     = "20m"
  depends_on  = [exec.image_rootfs_base]
}

task "exec" "image_pause" {
  description = "Our pause (flows/k8s-lab/pause), static."
  script      = <<-EOT
    set -e
    mkdir -p .lab/images
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o .lab/images/pause ./flows/k8s-lab/pause
    echo "$PWD/.lab/images/pause"
  EOT
  dir         = local.root
  timeout     = "10m"
}

# Links the packages do not make: etcd where its manifest runs it, nginx's logs to the
# container's output (as the real images have them).
task "exec" "image_links" {
  description = "Symbolic links added to the etcd and nginx images."
  script      = <<-EOT
    set -e
    d=.lab/images/links
    # A link already right is left alone: remaking it would change its time, and with it
    # the inputs image_build's cache compares, so every run would rebuild the image.
    link() { [ "$(readlink "$2" 2>/dev/null)" = "$1" ] || { mkdir -p "$(dirname "$2")" && ln -sfn "$1" "$2"; }; }
    link /usr/bin/etcd $d/etcd/usr/local/bin/etcd
    link /usr/bin/etcdctl $d/etcd/usr/local/bin/etcdctl
    link /dev/stdout $d/nginx/var/log/nginx/access.log
    link /dev/stderr $d/nginx/var/log/nginx/error.log
    # The real image serves /usr/share/nginx/html; Debian's site serves /var/www/html.
    link /usr/share/nginx/html $d/nginx/var/www/html
    echo "$PWD/$d"
  EOT
  dir         = local.root
}

# --- images, pushed to the stand-in upstream registry ----------------------------------------

# Debian bookworm minbase with CA certificates: the base of the images that add only a
# binary, and what alpine:3.21.0 (etcd's init container under karmadactl init, which needs
# only sh and tee) stands for.
task "image_build" "image_debian" {
  layers     = [{ tarball = exec.image_rootfs_base.stdout }]
  env        = local.image_path_env
  cmd        = ["bash"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.debian}"
  insecure   = true
  timeout    = "10m"
  depends_on = [module.registries]
}

task "image_build" "image_alpine" {
  base     = image_build.image_debian.reference
  cmd      = ["/bin/sh"]
  labels   = { "org.flowdev.lab.stand-in" = "Debian bookworm minbase (sh, coreutils), not Alpine" }
  push     = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.alpine}"
  insecure = true
}

task "image_build" "image_pause" {
  layers     = [{ source = exec.image_pause.stdout, destination = "/pause", mode = "0755" }]
  entrypoint = ["/pause"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.pause}"
  insecure   = true
  depends_on = [module.registries]
}

task "image_build" "image_etcd" {
  layers = [
    { tarball = exec.image_rootfs["etcd"].stdout },
    { source = "${exec.image_links.stdout}/etcd/usr", destination = "/" },
  ]
  env           = local.image_path_env
  cmd           = ["/usr/local/bin/etcd"]
  exposed_ports = ["2379", "2380"]
  push          = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.etcd}"
  insecure      = true
  timeout       = "10m"
  depends_on    = [module.registries]
}

task "image_build" "image_kube" {
  for_each   = local.image_kube
  base       = image_build.image_debian.reference
  layers     = [{ source = exec.kube_bin[each.key].stdout, destination = "/usr/local/bin/${each.key}", mode = "0755" }]
  entrypoint = ["/usr/local/bin/${each.key}"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${each.value}"
  insecure   = true
  timeout    = "10m"
}

# kube-proxy programs iptables: on a root with Debian's iptables (nft backend by default)
# and conntrack instead of the base.
task "image_build" "image_kube_proxy" {
  layers = [
    { tarball = exec.image_rootfs["kube_proxy"].stdout },
    { source = exec.kube_bin["kube-proxy"].stdout, destination = "/usr/local/bin/kube-proxy", mode = "0755" },
  ]
  env        = local.image_path_env
  entrypoint = ["/usr/local/bin/kube-proxy"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.kube_proxy}"
  insecure   = true
  timeout    = "10m"
  depends_on = [module.registries]
}

# /usr/bin is /bin in the base (merged /usr): a layer with its own bin/ directory would
# hide the base's /bin -> usr/bin link, and with it /bin/sh.
task "image_build" "image_karmada" {
  for_each   = merge(local.image_karmada, local.image_karmada_addons)
  base       = image_build.image_debian.reference
  layers     = [{ source = exec.karmada_bin[each.key].stdout, destination = "/usr/bin/${each.key}", mode = "0755" }]
  entrypoint = ["/bin/${each.key}"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${each.value}"
  insecure   = true
  timeout    = "10m"
}

task "image_build" "image_coredns" {
  base          = image_build.image_debian.reference
  layers        = [{ source = exec.coredns_bin.stdout, destination = "/coredns", mode = "0755" }]
  entrypoint    = ["/coredns"]
  exposed_ports = ["53/tcp", "53/udp", "9153"]
  push          = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.coredns}"
  insecure      = true
}

task "image_build" "image_nginx" {
  layers = [
    { tarball = exec.image_rootfs["nginx"].stdout },
    { source = "${exec.image_links.stdout}/nginx/var", destination = "/" },
  ]
  env           = local.image_path_env
  cmd           = ["nginx", "-g", "daemon off;"]
  exposed_ports = ["80"]
  push          = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.nginx}"
  insecure      = true
  timeout       = "10m"
  depends_on    = [module.registries]
}

task "image_build" "image_prometheus" {
  layers        = [{ tarball = exec.image_rootfs["prometheus"].stdout }]
  env           = local.image_path_env
  entrypoint    = ["/bin/prometheus"]
  cmd           = ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
  workdir       = "/prometheus"
  exposed_ports = ["9090"]
  push          = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.prometheus}"
  insecure      = true
  timeout       = "10m"
  depends_on    = [module.registries]
}

# Debian's python3 is 3.11, so the Flask demo's base keeps the name flows/flask-import.hcl
# builds on; Flask comes from Debian (python3-flask 2.2), not from pip.
task "image_build" "image_python" {
  layers     = [{ tarball = exec.image_rootfs["python"].stdout }]
  env        = local.image_path_env
  cmd        = ["python3"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.python}"
  insecure   = true
  timeout    = "10m"
  depends_on = [module.registries]
}

# MicroK8s's hostpath-storage addon runs cdkbot/hostpath-provisioner; this is ours, built
# here (flows/k8s-lab/hostpath), under that name.
task "image_build" "image_hostpath" {
  base       = image_build.image_debian.reference
  layers     = [{ source = exec.hostpath_bin.stdout, destination = "/hostpath-provisioner", mode = "0755" }]
  entrypoint = ["/hostpath-provisioner"]
  labels     = { "org.flowdev.lab.stand-in" = "built from flows/k8s-lab/hostpath, not cdkbot's" }
  push       = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.hostpath}"
  insecure   = true
  timeout    = "10m"
}

# The Karmada addons' loopback forwarder (addons.hcl): Debian's socat and bash.
task "image_build" "image_socat" {
  for_each   = local.image_rootfs_addons
  layers     = [{ tarball = exec.image_rootfs[each.key].stdout }]
  env        = local.image_path_env
  entrypoint = ["socat"]
  labels     = { "org.flowdev.lab.stand-in" = "Debian bookworm's socat, the lab's own image" }
  push       = "${module.registries.endpoints["lab-upstream"]}/${local.image_path.socat}"
  insecure   = true
  timeout    = "10m"
  depends_on = [module.registries]
}

# metrics-server (metrics.hcl), as upstream's image has it: the binary at /, its entrypoint.
task "image_build" "image_metrics_server" {
  for_each   = local.image_metrics_server
  base       = image_build.image_debian.reference
  layers     = [{ source = exec.metrics_server_bin[each.key].stdout, destination = "/metrics-server", mode = "0755" }]
  entrypoint = ["/metrics-server"]
  push       = "${module.registries.endpoints["lab-upstream"]}/${each.value}"
  insecure   = true
  timeout    = "10m"
}

# --- the lab registry -------------------------------------------------------------------------

# Every image above, pinned by the digest just built and pushed under its tag; flatten
# names each one by its last path element, as karmadactl init --private-image-registry wants.
task "image_mirror" "lab" {
  images = concat(
    [for k, b in image_build.image_kube : "${module.registries.endpoints["lab-upstream"]}/${local.image_kube[k]}@${b.digest}"],
    [for k, b in image_build.image_karmada : "${module.registries.endpoints["lab-upstream"]}/${merge(local.image_karmada, local.image_karmada_addons)[k]}@${b.digest}"],
    [for k, b in image_build.image_socat : "${module.registries.endpoints["lab-upstream"]}/${local.image_path[k]}@${b.digest}"],
    [for k, b in image_build.image_metrics_server : "${module.registries.endpoints["lab-upstream"]}/${local.image_metrics_server[k]}@${b.digest}"],
    [for k, b in {
      debian     = image_build.image_debian
      alpine     = image_build.image_alpine
      pause      = image_build.image_pause
      kube_proxy = image_build.image_kube_proxy
      etcd       = image_build.image_etcd
      coredns    = image_build.image_coredns
      nginx      = image_build.image_nginx
      prometheus = image_build.image_prometheus
      python     = image_build.image_python
      hostpath   = image_build.image_hostpath
    } : "${module.registries.endpoints["lab-upstream"]}/${local.image_path[k]}@${b.digest}"],
  )
  registry   = module.registries.endpoints["lab-registry"]
  naming     = "flatten"
  insecure   = true
  timeout    = "20m"
  depends_on = [module.registries]
}

output "images" {
  description = "Each image's upstream path and tag (docker.io/ or registry.k8s.io/ left off) => its copy in the lab registry, pinned by digest."
  value       = { for src, dst in image_mirror.lab.images : split("@", trimprefix(src, "${module.registries.endpoints["lab-upstream"]}/"))[0] => dst }
}
