# Functions in locals and task attributes; file and templatefile read relative to
# the flow's directory, env reads the flow process's environment.

variable "name" {
  default = "world"
}

locals {
  greeting = format("hello, %s!", var.name)
  joined   = join(",", ["a", "b", "c"])
  merged   = merge({ a = 1, b = 2 }, { b = 3, c = 4 })
  json     = jsonencode({ name = var.name, n = 2 })
  yaml     = yamlencode({ name = var.name })
  rendered = templatefile("../templates/greeting.tmpl", { name = var.name, items = ["x", "y"] })
  motd     = trimspace(file("../templates/motd.txt"))
  from_env = env("FLOW_TEST_GREETING")
  unset    = env("FLOW_TEST_SURELY_UNSET_VARIABLE")
  upper    = upper(local.greeting)
  dir      = dirname("/srv/www/index.html")
  base     = basename("/srv/www/index.html")
  b64      = base64encode("flow ✓")
  unb64    = base64decode(local.b64)
}

task "exec" "render" {
  command = ["echo", local.rendered, local.json, local.yaml, local.motd]
  env = {
    GREETING = local.greeting
    JOINED   = local.joined
    FROM_ENV = local.from_env
  }
  stdin         = templatefile("${path.flow}/../templates/greeting.tmpl", { name = "stdin", items = [] })
  dir           = path.flow
  ok_exit_codes = [for k, v in local.merged : v if k != "a"]
}
