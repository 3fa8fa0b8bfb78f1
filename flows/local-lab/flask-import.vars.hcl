# flows/flask-import.hcl against the local lab (flows/local-lab.hcl): the base image comes
# from the lab registry on 127.0.0.1:32000 (mirrored there from the stand-in upstream), pip
# is not run (no PyPI here), and instead of `microk8s images import` each member lists the
# archive's manifest, after the sha256 check that every variant does.
base_image          = "127.0.0.1:32000/python:3.11-slim"
vendor_requirements = false
registry            = "127.0.0.1:32000"
import_script       = "tar -xOf /root/flask-demo.tar manifest.json | grep -o '\"RepoTags\":\\[[^]]*flask-demo[^]]*\\]'"
