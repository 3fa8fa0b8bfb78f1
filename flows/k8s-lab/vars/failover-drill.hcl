# flows/failover-drill.hcl against the Kubernetes lab (flows/k8s-lab): the same flow the real
# lab runs, with nginx from the lab registry and the lab's kubeconfigs and Karmada data
# (pass --var config_dir=DIR and --var karmada_data=DIR/karmada when the lab was run with
# another config_dir). karmadactl is the one scripts/k8s-bins.sh built:
#   --var karmadactl_path=$HOME/.cache/flow/bin/karmadactl-v1.13.0
image              = "localhost:32000/nginx:1.27"
config_dir         = ".lab/k8s-lab"
karmada_data       = ".lab/k8s-lab/karmada"
toleration_seconds = 30
