#!/bin/sh
# config.sh [USER]: prints a kubeconfig for USER (default admin) of this member's API server
# on 127.0.0.1:16443, as `microk8s config` does: the cluster CA and the user's token.
set -eu
P=/var/lib/k8s/pki user=${1:-admin} name=$(hostname)
cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: $name
  cluster:
    server: https://127.0.0.1:16443
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $user
  user:
    token: $(cat "$P/token-$user")
contexts:
- name: $name
  context:
    cluster: $name
    user: $user
current-context: $name
YAML
