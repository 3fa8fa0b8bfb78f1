# mirror.hcl — the flow of the e2e mirror test (e2e/mirror_test.go).
#
# One image_mirror instance per group of repositories, all from var.source to
# var.target (registries the test serves on loopback). A SIGKILL in the middle
# leaves some groups done, one or more half done; resume re-runs only the
# unfinished instances, and those skip every image the target already holds.

variable "source" {
  type        = string
  description = "Source registry host:port."
}

variable "target" {
  type        = string
  description = "Target registry host:port."
}

variable "groups" {
  type        = map(list(string))
  description = "Group name to the repository paths (with tags) to mirror from source."
}

task "image_mirror" "group" {
  for_each    = var.groups
  images      = [for path in each.value : "${var.source}/${path}"]
  registry    = var.target
  parallelism = 2
}

output "mirrored" {
  value = merge([for g in image_mirror.group : g.images]...)
}
