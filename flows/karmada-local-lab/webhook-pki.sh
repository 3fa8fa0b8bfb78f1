#!/bin/sh
# Writes, once, a CA and a serving certificate for karmada-webhook on 127.0.0.1 into DIR
# (ca.crt, ca.key, tls.crt, tls.key). The webhook configurations trust ca.crt. Prints DIR.
set -eu
dir=$1
umask 077
mkdir -p "$dir"
if [ ! -s "$dir/ca.crt" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=flow-karmada-webhook-ca" \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
fi
if [ ! -s "$dir/tls.crt" ]; then
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$dir/san.ext"
  openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 3650 -extfile "$dir/san.ext" -out "$dir/tls.crt" 2>/dev/null
  rm -f "$dir/tls.csr" "$dir/san.ext"
fi
echo "$dir"
