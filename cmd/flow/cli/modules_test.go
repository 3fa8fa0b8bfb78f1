package cli

import (
	"strings"
	"testing"
)

// TestModules runs a flow with a module per member and reads status and logs of task
// instances inside the modules by their addresses, with and without quoted keys.
func TestModules(t *testing.T) {
	h := newHarness(t)
	flow := flowPath("modules.hcl")
	h.expect(ExitOK, "validate", flow)
	h.expect(ExitOK, "plan", flow)
	r := h.expect(ExitOK, "run", flow, "--parallelism", "1")
	if !strings.Contains(r.stdout, `[module.member["m2"].exec.launch] launching m2`) {
		t.Errorf("run output lacks the module instance's prefixed line:\n%s", r.stdout)
	}
	h.expect(ExitOK, "status")
	r = h.expect(ExitOK, "logs", `module.member["m1"].exec.configure`)
	if r.stdout != "launching m1 with registry up\n" {
		t.Errorf("logs: %q", r.stdout)
	}
	h.expect(ExitOK, "logs", `module.member[m2].exec.launch`) // the shell ate the quotes
	golden(t, "modules.txt", h.log.String())
}
