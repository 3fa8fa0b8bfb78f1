#!/bin/sh
# pki.sh DIR NAME [ADDRESS]: writes one member's credentials into DIR, once (existing files are kept,
# so a re-run changes nothing), as MicroK8s does at install: a cluster CA; the API server's
# serving certificate for every name it is reached by (the forwarded 127.0.0.1, the pod
# bridge 10.1.0.1, the kubernetes Service 10.152.183.1 and its DNS names, and ADDRESS, the
# address of the member's host when it is another machine's); its client
# certificate for the kubelet; the service-account key pair; one token per component
# in the token file the API server reads; and the aggregation layer's front proxy: a CA of
# its own and the client certificate the API server presents to the APIs it proxies to
# (metrics.k8s.io: metrics-server), which trust only that CA, as kubeadm has it. A member
# set up before the front proxy gets its two pairs at the next run, the rest kept. Prints
# DIR. Runs on the host (openssl).
#
# Every file is written under a temporary name of this process's own and renamed into
# place, so a run killed at any moment leaves whole files or none, and the next run
# completes the set; an openssl that outlives a killed run writes only its own temporary
# file, never one the next run renames.
set -eu
dir=$1 name=$2 address=${3:-}
umask 077
mkdir -p "$dir"
cd "$dir"
# ssl FILE COMMAND ARGS...: openssl COMMAND -out FILE.tmp.PID ARGS, then renamed to
# FILE; nothing when FILE is already there. openssl's chatter is dropped, its errors are not.
ssl() {
  f=$1 cmd=$2; shift 2
  [ -s "$f" ] && return 0
  out=$(openssl "$cmd" -out "$f.tmp.$$" "$@" 2>&1) || { rm -f "$f.tmp.$$"; echo "$out" >&2; return 1; }
  mv "$f.tmp.$$" "$f"
}
ssl ca.key genrsa 2048
ssl ca.crt req -x509 -new -key ca.key -subj "/CN=flow-member-ca-$name" -days 3650
signer=ca
cert() { # cert NAME SUBJECT [SANS]: a key and a certificate signed by the CA $signer
  [ -s "$1.crt" ] && return 0
  ssl "$1.key" genrsa 2048
  ssl "$1.csr" req -new -key "$1.key" -subj "$2"
  if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\n' "$3" >"$1.ext.$$"; else : >"$1.ext.$$"; fi
  ssl "$1.crt" x509 -req -in "$1.csr" -CA "$signer.crt" -CAkey "$signer.key" -set_serial "0x$(openssl rand -hex 8)" -days 3650 -extfile "$1.ext.$$"
  rm -f "$1.csr" "$1.ext.$$"
}
cert apiserver "/CN=kube-apiserver" \
  "IP:127.0.0.1,${address:+IP:$address,}IP:10.1.0.1,IP:10.152.183.1,DNS:localhost,DNS:$name,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
# The front proxy's CN is the one name the API server's --requestheader-allowed-names allows.
ssl front-proxy-ca.key genrsa 2048
ssl front-proxy-ca.crt req -x509 -new -key front-proxy-ca.key -subj "/CN=flow-front-proxy-ca-$name" -days 3650
signer=front-proxy-ca
cert front-proxy-client "/CN=front-proxy-client"
ssl sa.key genrsa 2048
ssl sa.pub rsa -in sa.key -pubout
tok() { # tok USER: USER's token, made once
  [ -s "token-$1" ] || { openssl rand -hex 16 >"token-$1.tmp.$$" && mv "token-$1.tmp.$$" "token-$1"; }
  cat "token-$1"
}
{
  printf '%s,admin,admin,system:masters\n' "$(tok admin)"
  printf '%s,system:node:%s,kubelet,system:nodes\n' "$(tok kubelet)" "$name"
  printf '%s,system:kube-proxy,kube-proxy\n' "$(tok kube-proxy)"
  printf '%s,system:kube-scheduler,kube-scheduler\n' "$(tok kube-scheduler)"
  printf '%s,system:kube-controller-manager,kube-controller-manager\n' "$(tok kube-controller-manager)"
} >"tokens.csv.tmp.$$"
mv "tokens.csv.tmp.$$" tokens.csv
echo "$dir"
