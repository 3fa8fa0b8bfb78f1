# local-lab-teardown.hcl — removes everything flows/local-lab.hcl created: the member and
# registry containers (their proxy devices go with them), the lab profile and the image
# alias. Absent objects are skipped, so it is safe to run at any point, any number of times.
#
#   flow run flows/local-lab-teardown.hcl --new

variable "members" {
  type        = set(string)
  default     = ["member1", "member2", "member3"]
  description = "Member containers to delete."
}

variable "image_alias" {
  type        = string
  default     = "flow-lab-busybox"
  description = "Image alias to delete."
}

task "lxd_delete" "lab" {
  instances = concat(sort(var.members), ["lab-registry", "lab-upstream"])
  profiles  = ["flow-lab"]
  images    = [var.image_alias]
  force     = true
}

output "deleted" {
  value = lxd_delete.lab.deleted
}
