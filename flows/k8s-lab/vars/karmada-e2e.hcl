# karmada-e2e.hcl — the lab's Karmada as upstream's e2e deployment runs it
# (karmada v1.13.0, artifacts/deploy/karmada-controller-manager.yaml and
# artifacts/agent/karmada-agent.yaml), for Karmada's own
# e2e suite (make karmada-e2e):
#
#   flow run flows/k8s-lab --var-file flows/k8s-lab/vars/karmada-e2e.hcl --state .flow/k8s-lab.db
#
# Every alpha and beta feature on in karmada-controller-manager (Failover among them), the
# two controllers off by default that the suite's specs need, a failed member's workloads
# moved after 30 s instead of 5 min, and the pull member's agent collecting EndpointSlices
# (MultiClusterService).
karmada_feature_gates             = "AllAlpha=true,AllBeta=true"
karmada_controllers               = "*,hpaScaleTargetMarker,deploymentReplicasSyncer"
karmada_failover_eviction_timeout = "30s"
karmada_agent_feature_gates       = "CustomizedClusterResourceModeling=true,MultiClusterService=true"

# The addons a real Karmada runs, built from the Karmada module (flows/k8s-lab/addons.hcl):
# search_test.go, metrics_test.go and the descheduler's specs need them.
karmada_addons = ["karmada-search", "karmada-descheduler", "karmada-scheduler-estimator", "karmada-metrics-adapter"]

# metrics-server in every cluster (flows/k8s-lab/metrics.hcl), as upstream's
# hack/deploy-k8s-metrics-server.sh installs it in its members: the FederatedHPA specs
# (through karmada-metrics-adapter) and `karmadactl top` read the members' metrics.k8s.io.
metrics_server = true
