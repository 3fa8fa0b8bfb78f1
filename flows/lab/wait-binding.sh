#!/bin/sh
# wait-binding.sh KARMADA_KUBECONFIG NAMESPACE BINDING CLUSTER absent|present TIMEOUT_SECONDS
#
# Polls the ResourceBinding's scheduling result (spec.clusters) until CLUSTER is absent
# from it (its replicas moved elsewhere) or present in it again. wait_ready's condition
# kind cannot say this: the binding's Scheduled condition is True before and after the
# move; only the list of clusters changes. Prints the result whenever it changes and every
# 10 s (to stderr), the final result (to stdout), and fails after TIMEOUT_SECONDS naming
# the last result. $KUBECTL names kubectl.
set -eu
export PATH="$PATH:/snap/bin" # microk8s kubectl

kubeconfig=$1 namespace=$2 binding=$3 cluster=$4 want=$5 timeout=$6
kubectl=${KUBECTL:-microk8s kubectl}

start=$(date +%s)
last="" printed=0
while :; do
	if result=$($kubectl --kubeconfig "$kubeconfig" -n "$namespace" get resourcebindings.work.karmada.io "$binding" \
		-o 'jsonpath={range .spec.clusters[*]}{.name}={.replicas} {end}' 2>&1); then
		result=${result% }
		case " $result" in
		*" $cluster="*) state=present ;;
		*) state=absent ;;
		esac
	else
		state=unknown
	fi
	now=$(date +%s)
	if [ "$state" = "$want" ]; then
		echo "binding $namespace/$binding: $cluster $want after $((now - start))s: $result"
		exit 0
	fi
	if [ "$result" != "$last" ] || [ $((now - printed)) -ge 10 ]; then
		echo "binding $namespace/$binding: waiting for $cluster to be $want: $result" >&2
		last=$result printed=$now
	fi
	if [ $((now - start)) -ge "$timeout" ]; then
		echo "binding $namespace/$binding: $cluster not $want after ${timeout}s; last: $result" >&2
		exit 1
	fi
	sleep 2
done
