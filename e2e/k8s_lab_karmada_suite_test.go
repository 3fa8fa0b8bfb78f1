package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// checkKarmadaSuite runs the focused subset of Karmada's own e2e suite
// (flows/karmada-e2e/ci.txt) on the finished lab as `make karmada-e2e-ci` does: the
// lab's Karmada set as upstream's e2e deployment (vars/karmada-e2e.hcl, a run of the lab's
// own state), the suite's images into the lab registry and the interpreter webhook example
// into its clusters (flows/karmada-e2e.hcl), then scripts/karmada-e2e.sh run ci. Every
// spec it runs must pass; the report is logged.
func checkKarmadaSuite(t *testing.T, tag, root, configDir, state string) {
	t.Helper()
	r := runFlow(t, tag, root, 10*time.Minute, "run", filepath.Join(root, "flows", "k8s-lab"),
		"--var", "config_dir="+configDir, "--var-file", filepath.Join(root, "flows", "k8s-lab", "vars", "karmada-e2e.hcl"),
		"--state", state)
	if r.code != 0 {
		t.Fatalf("the lab with vars/karmada-e2e.hcl exited %d\n%s", r.code, r.desc)
	}
	// config_dir: the interpreter webhook example goes into this lab's clusters.
	r = runFlow(t, tag, root, 30*time.Minute, "run", filepath.Join(root, "flows", "karmada-e2e.hcl"),
		"--var", "config_dir="+configDir, "--state", filepath.Join(t.TempDir(), "karmada-e2e.db"))
	if r.code != 0 {
		t.Fatalf("flows/karmada-e2e.hcl exited %d\n%s", r.code, r.desc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	report := filepath.Join(t.TempDir(), "ci.json")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "karmada-e2e.sh"), "run", "ci")
	cmd.Env = append(os.Environ(), "CONFIG_DIR="+configDir, "REPORT="+report)
	out, err := cmd.CombinedOutput() // ends with the report: a table per file, failures, what is left out
	if err != nil {
		t.Fatalf("Karmada's e2e suite (ci set): %v\n%s", err, tail(string(out), 200))
	}
	t.Logf("Karmada's e2e suite (ci set):\n%s", tail(string(out), 60))
}
