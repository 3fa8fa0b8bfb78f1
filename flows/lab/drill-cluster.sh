#!/bin/sh
# drill-cluster.sh drain|restore CLUSTER KARMADA_KUBECONFIG TAINT_KEY
#
# drain: cordon CLUSTER (taint NoSchedule: nothing new is scheduled there) and taint it
# TAINT_KEY=drill:NoExecute, which Karmada's taint manager answers by evicting every
# binding that does not tolerate it — so the replicas move. A cordon alone moves nothing:
# karmada-scheduler v1.13 keeps a cluster that is already in a binding's result and does
# not reschedule Divided bindings when a cluster changes.
# restore: remove the taint and uncordon.
#
# Both are idempotent: what is already in the wanted state is reported "already present"
# or "already absent" and left alone. $KARMADACTL and $KUBECTL name the programs.
set -eu
export PATH="$PATH:/snap/bin" # microk8s kubectl

action=$1 cluster=$2 kubeconfig=$3 key=$4
karmadactl=${KARMADACTL:-karmadactl}
kubectl=${KUBECTL:-microk8s kubectl}

tainted() {
	$kubectl --kubeconfig "$kubeconfig" get clusters.cluster.karmada.io "$cluster" \
		-o "jsonpath={.spec.taints[?(@.key==\"$key\")].effect}" | grep -q NoExecute
}

case $action in
drain)
	"$karmadactl" cordon "$cluster" --kubeconfig "$kubeconfig"
	if tainted; then
		echo "taint $key:NoExecute on $cluster already present"
	else
		"$karmadactl" taint clusters "$cluster" "$key=drill:NoExecute" --kubeconfig "$kubeconfig"
	fi
	;;
restore)
	if tainted; then
		"$karmadactl" taint clusters "$cluster" "$key:NoExecute-" --kubeconfig "$kubeconfig"
	else
		echo "taint $key:NoExecute on $cluster already absent"
	fi
	"$karmadactl" uncordon "$cluster" --kubeconfig "$kubeconfig"
	;;
*)
	echo "usage: $0 drain|restore CLUSTER KARMADA_KUBECONFIG TAINT_KEY" >&2
	exit 2
	;;
esac
