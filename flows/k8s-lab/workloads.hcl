# A workload in every member, straight through its own API server (Karmada's own nginx
# comes later, from module.karmada in karmada.hcl): an nginx Deployment pulled from localhost:32000 and a Service. The
# host reaches each member's Service through a proxy device whose far end, inside the
# member, is the Service's cluster IP: kube-proxy's iptables rules carry it to a pod.

variable "web_image" {
  type        = string
  default     = "localhost:32000/nginx:1.27"
  description = "The web server image the members run (mirrored into the lab registry by images.hcl)."
}

variable "web_ports" {
  type        = map(number)
  default     = { member1 = 18441, member2 = 18442, member3 = 18444 }
  description = "Host port forwarded to each member's web Service, on its host's address (hosts.hcl)."
}

task "k8s_apply" "web" {
  for_each   = var.members
  kubeconfig = kubeconfig.member[each.key].path
  content = templatefile("${local.member_dir}/web.yaml.tftpl", {
    image  = var.web_image
    member = each.key
  })
  depends_on = [wait_ready.member_node[each.key], image_mirror.lab]
}

task "wait_ready" "web" {
  for_each     = var.members
  kind         = "pods"
  kubeconfig   = kubeconfig.member[each.key].path
  namespace    = "default"
  selector     = "app=web"
  min_count    = 2
  interval     = "1s"
  wait_timeout = "5m"
  depends_on   = [k8s_apply.web[each.key]]
}

task "proxy_device" "web" {
  for_each   = var.members
  remote     = local.remote_of[each.key]
  instance   = lxd_launch.member[each.key].name
  name       = "web"
  listen     = "tcp:${local.address_of[each.key]}:${var.web_ports[each.key]}"
  connect    = "tcp:10.152.183.80:80"
  depends_on = [wait_ready.web[each.key]]
}

task "wait_ready" "web_http" {
  for_each     = var.members
  kind         = "http"
  url          = "http://${proxy_device.web[each.key].address}/"
  body_match   = "web ${each.key}"
  interval     = "1s"
  wait_timeout = "2m"
}

output "web" {
  value = { for m, w in wait_ready.web_http : m => "http://${proxy_device.web[m].address}/" }
}
