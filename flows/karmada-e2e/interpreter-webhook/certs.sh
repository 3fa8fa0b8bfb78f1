#!/usr/bin/env bash
# certs.sh OUT KARMADA_KUBECONFIG SAN: what karmada-interpreter-webhook-example needs
# besides its manifest, as upstream's hack/deploy-karmada.sh makes it for its e2e
# deployment: a CA (OUT/ca.crt, the caBundle of the webhook configuration), the serving
# certificate it signs (SAN: the addresses Karmada dials, e.g.
# IP:10.1.0.1,DNS:karmada-interpreter-webhook-example.karmada-system.svc), and
# OUT/secrets.yaml, the Secrets the example's Deployment mounts:
#   karmada-interpreter-webhook-example-cert    tls.crt, tls.key, ca.crt
#   karmada-interpreter-webhook-example-config  karmada.config, a kubeconfig for Karmada's
#                                               API server from a pod of the host cluster
# The CA and certificate are made once and kept while SAN stays the same; secrets.yaml
# (keys: mode 0600) is written every time. Prints OUT.
set -euo pipefail
out=${1:?usage: certs.sh OUT KARMADA_KUBECONFIG SAN}
kubeconfig=${2:?usage: certs.sh OUT KARMADA_KUBECONFIG SAN}
san=${3:?usage: certs.sh OUT KARMADA_KUBECONFIG SAN}
name=karmada-interpreter-webhook-example
# The address the host cluster's pods reach Karmada's API server at (upstream's
# artifacts/deploy/karmada-config-secret.yaml); karmadactl init's certificate names it.
server=https://karmada-apiserver.karmada-system.svc.cluster.local:5443
umask 077
mkdir -p "$out"
cd "$out"

if [ "$(cat san 2>/dev/null)" != "$san" ] || ! [ -s ca.crt ] || ! [ -s tls.crt ]; then
  echo "certs.sh: making a CA and a serving certificate for $san" >&2
  rm -f ca.crt ca.key tls.crt tls.key san
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$name-ca" \
    -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$name" -keyout tls.key -out tls.csr 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment\n' "$san" >tls.ext
  openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
    -extfile tls.ext -out tls.crt 2>/dev/null
  rm -f tls.csr tls.ext ca.srl
  echo "$san" >san
fi

# Karmada's kubeconfig (this machine's), with the server the pods dial.
karmada_config=$(KUBECONFIG=$kubeconfig kubectl config view --flatten --minify)
karmada_config=$(sed -e "s|^\( *server:\).*|\1 $server|" <<<"$karmada_config")

b64() { base64 -w0 "$@"; }
cat >secrets.yaml.tmp <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: $name-cert
  namespace: karmada-system
type: kubernetes.io/tls
data:
  ca.crt: $(b64 ca.crt)
  tls.crt: $(b64 tls.crt)
  tls.key: $(b64 tls.key)
---
apiVersion: v1
kind: Secret
metadata:
  name: $name-config
  namespace: karmada-system
data:
  karmada.config: $(printf '%s\n' "$karmada_config" | b64)
YAML
mv secrets.yaml.tmp secrets.yaml
echo "$PWD"
