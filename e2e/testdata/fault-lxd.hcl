# fault-lxd.hcl — the flow of the e2e LXD daemon fault test (e2e/fault_lxd_test.go).
#
# The local lab's LXD steps (image, profile, launch with wait_for, file push, exec,
# proxy device, a wait through the proxy) under names and ports of the test's own, so
# it never touches the lab's. The test kills the LXD daemon during one of the steps and
# starts it again as scripts/lab-setup.sh does; the run must succeed without a resume.

variable "root" {
  type        = string
  description = "The repository: scripts/busybox-image.sh builds the image from there."
}

variable "prefix" {
  type        = string
  default     = "flt"
  description = "Prefix of every name the flow creates."
}

variable "members" {
  type        = map(number)
  default     = { a = 16541, b = 16542 }
  description = "Member name suffix to the host port forwarded to its httpd."
}

task "exec" "busybox_image" {
  command = ["bash", "scripts/busybox-image.sh"]
  dir     = var.root
}

task "lxd_image_import" "busybox" {
  file  = "${var.root}/${exec.busybox_image.stdout}"
  alias = "${var.prefix}-busybox"
}

task "lxd_profile" "fault" {
  name   = "${var.prefix}-profile"
  config = { "limits.memory" = "128MiB", "limits.processes" = "100" }
}

task "lxd_launch" "member" {
  for_each = var.members
  name     = "${var.prefix}-${each.key}"
  image    = lxd_image_import.busybox.alias
  profiles = ["default", lxd_profile.fault.name]
  wait_for = ["sh", "-c", "ip link show lo | grep -q UP"]
}

task "lxd_file_push" "service" {
  for_each    = var.members
  instance    = lxd_launch.member[each.key].name
  destination = "/srv/www/index.html"
  content     = "member ${each.key}\n"
  create_dirs = true
}

task "lxd_exec" "start_service" {
  for_each = var.members
  instance = lxd_launch.member[each.key].name
  script   = "pidof httpd >/dev/null || httpd -p 127.0.0.1:8080 -h ${dirname(lxd_file_push.service[each.key].destination)}"
}

task "proxy_device" "service" {
  for_each   = var.members
  instance   = lxd_launch.member[each.key].name
  name       = "service"
  listen     = "tcp:127.0.0.1:${each.value}"
  connect    = "tcp:127.0.0.1:8080"
  depends_on = [lxd_exec.start_service[each.key]]
}

task "wait_ready" "member" {
  for_each     = var.members
  kind         = "http"
  url          = "http://${proxy_device.service[each.key].address}/"
  body_match   = "member ${each.key}"
  wait_timeout = "2m"
}
