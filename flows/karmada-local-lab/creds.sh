#!/bin/sh
# Writes the credentials of one API server into DIR, once: a service-account key pair
# (sa.key, sa.pub), an admin token (token) and the token file kube-apiserver reads
# (tokens.csv). Existing files are kept, so a re-run changes nothing. Prints DIR.
set -eu
dir=$1
umask 077
mkdir -p "$dir"
[ -s "$dir/sa.key" ] || openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
[ -s "$dir/sa.pub" ] || openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
[ -s "$dir/token" ] || openssl rand -hex 16 >"$dir/token"
printf '%s,admin,admin,system:masters\n' "$(cat "$dir/token")" >"$dir/tokens.csv"
echo "$dir"
