plugin "jsonfile" {
  source = "../../plugins/python/flow-plugin-jsonfile"
}
task "json_file" "w" {
  for_each = toset([for i in range(1) : tostring(i)])
  path     = "w-${each.key}.json"
  value    = { n = each.key }
}
