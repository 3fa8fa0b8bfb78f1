# The plugin e2e flow (e2e/plugin_test.go): marker tasks served by the test plugin
# markerplugin, built next to this flow's copy as flow-plugin-marker.
plugin "marker" {
  source = "./flow-plugin-marker"
}

variable "slow" {
  type    = string
  default = "0s"
}

variable "token" {
  type      = string
  default   = "s3cret-token-value"
  sensitive = true
}

task "marker" "m" {
  for_each = toset(["a", "b", "c"])
  path     = "out-${each.key}.txt"
  content  = "hello ${each.key}"
  log      = "writes.log"
  token    = each.key == "a" ? var.token : ""
  after    = each.key == "c" ? var.slow : "0s"
}

task "exec" "after" {
  command = ["cat", marker.m["a"].path, marker.m["c"].path]
}
