#!/bin/sh
# pki.sh DIR NAME: writes one member's credentials into DIR, once (existing files are kept,
# so a re-run changes nothing), as MicroK8s does at install: a cluster CA; the API server's
# serving certificate for every name it is reached by (the forwarded 127.0.0.1, the pod
# bridge 10.1.0.1, the kubernetes Service 10.152.183.1 and its DNS names); its client
# certificate for the kubelet; the service-account key pair; and one token per component
# in the token file the API server reads. Prints DIR. Runs on the host (openssl).
set -eu
dir=$1 name=$2
umask 077
mkdir -p "$dir"
cd "$dir"
ssl() { openssl "$@" 2>/dev/null; }
[ -s ca.key ] || ssl genrsa -out ca.key 2048
[ -s ca.crt ] || ssl req -x509 -new -key ca.key -subj "/CN=flow-member-ca-$name" -days 3650 -out ca.crt
cert() { # cert NAME SUBJECT [SANS]
  [ -s "$1.crt" ] && return
  ssl genrsa -out "$1.key" 2048
  ssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\n' "$3" >"$1.ext"; else : >"$1.ext"; fi
  ssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile "$1.ext" -out "$1.crt"
  rm -f "$1.csr" "$1.ext"
}
cert apiserver "/CN=kube-apiserver" \
  "IP:127.0.0.1,IP:10.1.0.1,IP:10.152.183.1,DNS:localhost,DNS:$name,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
[ -s sa.key ] || ssl genrsa -out sa.key 2048
[ -s sa.pub ] || ssl rsa -in sa.key -pubout -out sa.pub
tok() { [ -s "token-$1" ] || openssl rand -hex 16 >"token-$1"; cat "token-$1"; }
{
  printf '%s,admin,admin,system:masters\n' "$(tok admin)"
  printf '%s,system:node:%s,kubelet,system:nodes\n' "$(tok kubelet)" "$name"
  printf '%s,system:kube-proxy,kube-proxy\n' "$(tok kube-proxy)"
  printf '%s,system:kube-scheduler,kube-scheduler\n' "$(tok kube-scheduler)"
  printf '%s,system:kube-controller-manager,kube-controller-manager\n' "$(tok kube-controller-manager)"
} >tokens.csv
echo "$dir"
