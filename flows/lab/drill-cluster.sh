#!/bin/sh
# drill-cluster.sh drain|restore CLUSTER KARMADA_KUBECONFIG TAINT_KEY
#
# drain: cordon CLUSTER (karmadactl cordon: nothing new is scheduled there) and taint it
# TAINT_KEY=drill:NoExecute. Karmada's taint manager evicts every binding there that does
# not tolerate the taint, and a binding whose policy tolerates it for N seconds after N
# seconds: the failover policy's toleration, as for a member that went NotReady. A cordon
# alone moves nothing: Karmada keeps a placement that still works.
# restore: remove the taint and uncordon.
#
# Both are idempotent (--overwrite; a missing taint is reported "already absent").
# $KARMADACTL names karmadactl; it is the only program used.
set -eu

action=$1 cluster=$2 kubeconfig=$3 key=$4
karmadactl=${KARMADACTL:-karmadactl}

case $action in
drain)
	"$karmadactl" cordon "$cluster" --kubeconfig "$kubeconfig"
	"$karmadactl" taint clusters "$cluster" "$key=drill:NoExecute" --overwrite --kubeconfig "$kubeconfig"
	;;
restore)
	if ! out=$("$karmadactl" taint clusters "$cluster" "$key:NoExecute-" --kubeconfig "$kubeconfig" 2>&1); then
		case $out in
		*"not found"*) echo "taint $key:NoExecute on $cluster already absent" ;;
		*) echo "$out" >&2; exit 1 ;;
		esac
	else
		echo "$out"
	fi
	"$karmadactl" uncordon "$cluster" --kubeconfig "$kubeconfig"
	;;
*)
	echo "usage: $0 drain|restore CLUSTER KARMADA_KUBECONFIG TAINT_KEY" >&2
	exit 2
	;;
esac
