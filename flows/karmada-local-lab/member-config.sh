#!/bin/sh
# Prints the member's admin kubeconfig, as `microk8s config` does in the real lab: the API
# server on 127.0.0.1:16443 inside the container, its CA, and the admin token.
set -eu
D=/var/lib/k8s name=${1:-$(hostname)}
ca=$(base64 -w0 "$D/certs/apiserver.crt")
token=$(cat "$D/creds/token")
cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: https://127.0.0.1:16443
    certificate-authority-data: $ca
users:
- name: admin
  user:
    token: $token
contexts:
- name: $name
  context:
    cluster: $name
    user: admin
current-context: $name
YAML
