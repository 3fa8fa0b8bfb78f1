package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowdev/flow/internal/lxdtest"
)

// hostBFlow launches one busybox instance on the host var.host names, reaching host B
// with a single-use trust token given as a sensitive variable.
const hostBFlow = `variable "host" {
  type    = string
  default = "b"
}
variable "token" {
  type      = string
  default   = ""
  sensitive = true
}
variable "root" { type = string }
variable "name" { type = string }

locals {
  hosts = {
    a = {}
    b = {
      address     = "https://127.0.0.2:8443"
      client_cert = "certs/client.crt"
      client_key  = "certs/client.key"
      server_cert = "certs/b.crt"
      trust_token = var.token
    }
  }
}

task "exec" "busybox_image" {
  command = ["bash", "scripts/busybox-image.sh"]
  dir     = var.root
}

task "lxd_image_import" "busybox" {
  remote = local.hosts[var.host]
  file   = "${var.root}/${exec.busybox_image.stdout}"
  alias  = "${var.name}-img"
}

task "lxd_launch" "c" {
  remote = local.hosts[var.host]
  name   = var.name
  image  = lxd_image_import.busybox.alias
}
`

// TestHostBRecordedRemote (issue 29): a flow reaches host B with a trust token, which
// reaches neither its output nor its state; destroy, after the flow's host variable
// was changed to host A, removes the instance and image on host B, where the record
// says they are.
func TestHostBRecordedRemote(t *testing.T) {
	hb := lxdtest.StartHostB(t)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	tag, dir := newTag(t), t.TempDir()
	name := "e2e-hostb-" + tag
	writeFiles(t, dir, map[string]string{"f.hcl": hostBFlow})
	t.Cleanup(func() {
		_, _ = hb.Lxc("delete", "--force", name)
		_, _ = hb.Lxc("image", "delete", name+"-img")
		untrustDir(hb, filepath.Join(dir, "certs", "client.crt"))
	})
	token := hb.Token(t)
	vars := []string{"--var", "root=" + root, "--var", "name=" + name}
	r := flowExit(t, tag, dir, 0, append([]string{"run", "f.hcl", "--var", "token=" + token}, vars...)...)
	if out, err := hb.Lxc("list", name, "-c", "ns", "-f", "csv"); err != nil || !strings.Contains(out, name+",RUNNING") {
		t.Fatalf("no running %s on host B (%v): %q\n%s", name, err, out, r.desc)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("the trust token reached flow's output\n%s", r.desc)
	}
	if leaked := filesContaining(t, dir, token); len(leaked) > 0 {
		t.Errorf("the trust token reached %s", strings.Join(leaked, ", "))
	}

	r = flowExit(t, tag, dir, 0, append([]string{"destroy", "--auto-approve", "--var", "host=a"}, vars...)...)
	if out, _ := hb.Lxc("list", name, "-c", "n", "-f", "csv"); strings.Contains(out, name) {
		t.Errorf("destroy left %s on host B, where the run made it\n%s", name, r.desc)
	}
	if _, err := hb.Lxc("image", "info", name+"-img"); err == nil {
		t.Errorf("destroy left image %s-img on host B\n%s", name, r.desc)
	}
}

// filesContaining lists the files under dir whose bytes contain s.
func filesContaining(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), s) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// untrustDir removes the client certificate the flow generated from host B's trust.
func untrustDir(hb lxdtest.HostB, certPath string) {
	b, err := os.ReadFile(certPath)
	if err != nil {
		return
	}
	if block, _ := pem.Decode(b); block != nil {
		sum := sha256.Sum256(block.Bytes)
		_, _ = hb.Lxc("config", "trust", "remove", hex.EncodeToString(sum[:]))
	}
}
