# flows/k8s-lab over two LXD hosts (make demo-2host): karmada-host, member1 and the
# registries on host a (this machine's daemon), member2 and member3 on host B, the second
# daemon scripts/lab-host-b.sh runs on 127.0.0.2:8443 and trusts through a trust token.
# For a real second machine, give its address instead of 127.0.0.2 in host_addresses and
# remotes, and the paths of the client certificate it trusts (docs/k8s-lab.md, "Two hosts").
hosts = { member2 = "b", member3 = "b" }

host_addresses = { a = "127.0.0.1", b = "127.0.0.2" }

remotes = {
  b = {
    address     = "https://127.0.0.2:8443"
    client_cert = "/var/lib/flow-host-b/client/client.crt"
    client_key  = "/var/lib/flow-host-b/client/client.key"
    server_cert = "/var/lib/flow-host-b/client/servercerts/flow-host-b.crt"
  }
}
