# flows/monitoring.hcl against the Kubernetes lab (flows/k8s-lab): the same flow the real
# lab runs, with Prometheus pulled from the lab registry (built here from Debian's
# prometheus package; docs/k8s-lab-images.md) and the members' kubeconfigs from the lab's
# config_dir (pass --var config_dir=DIR when the lab was run with one).
image      = "localhost:32000/prometheus:v2.53.3"
config_dir = ".lab/k8s-lab"
# Debian's Prometheus 2.42 is built without Kubernetes service discovery.
kubernetes_discovery = false
