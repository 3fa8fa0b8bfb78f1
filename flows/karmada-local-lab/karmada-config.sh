#!/bin/sh
# Prints the admin kubeconfig of the host karmada-apiserver: https://127.0.0.1:PORT, the
# self-signed certificate it wrote into CERT_DIR as CA, and the admin token in CREDS_DIR.
set -eu
port=$1 cert_dir=$2 creds=$3
i=0
while [ ! -s "$cert_dir/apiserver.crt" ]; do
  i=$((i + 1)); [ $i -le 600 ] || { echo "no certificate in $cert_dir after 60s" >&2; exit 1; }
  sleep 0.1
done
cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: karmada-apiserver
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority-data: $(base64 -w0 "$cert_dir/apiserver.crt")
users:
- name: karmada-admin
  user:
    token: $(cat "$creds/token")
contexts:
- name: karmada-apiserver
  context:
    cluster: karmada-apiserver
    user: karmada-admin
current-context: karmada-apiserver
YAML
