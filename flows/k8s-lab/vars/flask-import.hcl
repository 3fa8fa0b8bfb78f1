# flows/flask-import.hcl against the Kubernetes lab (flows/k8s-lab): the base image is the
# lab registry's Debian python3-flask image (no PyPI here, so nothing is vendored), the
# tarball is imported into each member's containerd as `microk8s images import` does
# (`ctr -n k8s.io images import`), and the app then runs as a pod in every member, reached
# on the host through a proxy device to its pod IP (pass --var config_dir=DIR when the lab
# was run with one).
base_image          = "127.0.0.1:32000/python:3.11-slim"
vendor_requirements = false
registry            = "localhost:32000"
import_script       = "ctr -n k8s.io images import /root/flask-demo.tar"
run_in_members      = true
config_dir          = ".lab/k8s-lab"
