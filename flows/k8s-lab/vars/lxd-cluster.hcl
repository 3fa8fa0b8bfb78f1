# flows/k8s-lab on an LXD cluster (make demo-cluster): the loopback cluster of
# scripts/lab-cluster.sh, members c1, c2 and c3 on 127.0.0.3, .4 and .5, reached as one
# remote through c1 with the client configuration under /var/lib/flow-lab-cluster/client
# (LXD_CONF, as make demo-cluster starts it). Each cluster is placed on a member by target,
# the registries by LXD's scheduler; every proxy device listens on the address of the
# member its instance runs on. For a real cluster (MicroCloud), give a member's address
# and the client certificate it trusts (docs/k8s-lab.md, "On an LXD cluster").
lxd_remote = {
  address     = "https://127.0.0.3:8443"
  client_cert = "/var/lib/flow-lab-cluster/client/client.crt"
  client_key  = "/var/lib/flow-lab-cluster/client/client.key"
  server_cert = "/var/lib/flow-lab-cluster/client/servercerts/lab-cluster.crt"
}

targets = {
  karmada-host = "c1"
  member1      = "c2"
  member2      = "c3"
  member3      = "c1"
}

member_addresses = { c1 = "127.0.0.3", c2 = "127.0.0.4", c3 = "127.0.0.5" }
