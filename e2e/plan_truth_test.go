package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The plan tells the truth (issue 20, defects 4-6): for a set of flows and state
// histories, `flow plan` is asked, then the run or resume it previews is made, and
// what each instance did must be what the plan said. Every flow is exec and
// kubeconfig tasks in a temporary directory; none needs LXD.

// truthFlow: three members whose script logs each creation and whose undo logs each
// undo to log.txt; a kubeconfig file (a type that refreshes: it looks at its file);
// and a gate that fails until a file "go" exists, so a run can be left unfinished.
const truthFlow = `variable "members" {
  type    = set(string)
  default = ["m1", "m2", "m3"]
}

variable "greeting" {
  type    = string
  default = "hello"
}

task "exec" "member" {
  for_each = var.members
  script   = "echo create ${each.key} >> log.txt; echo ${var.greeting} > ${each.key}.marker"
  undo     = "echo undo ${each.key} >> log.txt; rm -f ${each.key}.marker"
}

task "kubeconfig" "config" {
  source = "src.config" # tasks/kube/testdata/probe.kubeconfig
  path   = "member.config"
}

task "exec" "gate" {
  depends_on = [exec.member, kubeconfig.config]
  script     = "test -f go"
}
`

// planRow is one instance line of a plan: `  ACTION  ADDRESS  REASON`.
var planRow = regexp.MustCompile(`^  (run\??|skip|destroy|keep)\s+(\S+)\s+(.*)$`)

// planned reads what plan output says of each instance, and why.
func planned(out string) (action, reason map[string]string) {
	action, reason = map[string]string{}, map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if m := planRow.FindStringSubmatch(line); m != nil {
			action[m[2]], reason[m[2]] = m[1], m[3]
		}
	}
	return action, reason
}

// did reads from a run's output what it did with each instance: "run" (it started),
// "skip" (up to date), "destroy" (no longer in the flow, destroyed) or "keep".
func did(out string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		addr, rest, ok := strings.Cut(line, ": ")
		if !ok || strings.HasPrefix(addr, "[") {
			continue
		}
		switch {
		case rest == "started" || strings.HasPrefix(rest, "started (attempt"):
			got[addr] = "run"
		case strings.HasPrefix(rest, "up to date"):
			got[addr] = "skip"
		case rest == "no longer in the flow; destroying":
			got[addr] = "destroy"
		case strings.HasPrefix(rest, "no longer in the flow") && got[addr] == "":
			got[addr] = "keep"
		}
	}
	return got
}

// comparePlan fails for every instance whose plan and run disagree: run must have
// run, skip must not have, destroy must have been destroyed, keep must not have
// been; run? may go either way.
func comparePlan(t *testing.T, plan, run result) {
	t.Helper()
	want, why := planned(plan.stdout)
	got := did(run.stdout)
	if len(want) == 0 {
		t.Fatalf("the plan lists no instance\n%s", plan.desc)
	}
	for addr, act := range want {
		g := got[addr]
		switch {
		case act == "run?":
		case act == "skip" && g != "" && g != "skip":
			t.Errorf("%s: the plan said skip (%s), the run did %s", addr, why[addr], g)
		case act != "skip" && g != act:
			t.Errorf("%s: the plan said %s (%s), the run did %q", addr, act, why[addr], g)
		}
	}
	for addr, g := range got {
		if _, ok := want[addr]; !ok {
			t.Errorf("%s: the run did %s with it; the plan does not list it", addr, g)
		}
	}
	if t.Failed() {
		t.Logf("plan:\n%s\nrun:\n%s", plan.stdout, run.stdout)
	}
}

// TestPlanMatchesRun: for each history, the plan says what the next command does,
// instance by instance, and its reasons name what happened before.
func TestPlanMatchesRun(t *testing.T) {
	type step struct {
		args  []string
		code  int
		after func(dir string) // what happens to the world after the step
		// A step with code 0 runs with the gate open (the file "go" exists).
	}
	run := func(code int, args ...string) step {
		return step{args: append([]string{"run", "main.hcl"}, args...), code: code}
	}
	cases := []struct {
		name    string
		history []step
		plan    []string // flow plan's arguments after PATH
		next    []string // the command the plan previews
		code    int
		reasons map[string]string // address: a part of the plan's reason
	}{{
		name: "fresh state",
		plan: nil, next: []string{"run", "main.hcl"}, code: 1,
		reasons: map[string]string{`exec.member["m1"]`: "not run before"},
	}, {
		name:    "after a successful run",
		history: []step{{args: []string{"run", "main.hcl"}, code: 0, after: touchGo}},
		next:    []string{"run", "main.hcl"}, code: 0,
		reasons: map[string]string{`exec.member["m1"]`: "succeeded in run 1", "exec.gate": "succeeded in run 1"},
	}, {
		name:    "resume after a failure",
		history: []step{run(1), {after: touchGo}},
		next:    []string{"resume"}, code: 0,
		reasons: map[string]string{`exec.member["m2"]`: "up to date: succeeded in run 1", "exec.gate": "failed"},
	}, {
		name:    "resume after an edited default",
		history: []step{run(1), {after: func(dir string) { touchGo(dir); editFlow(dir, `"hello"`, `"hi"`) }}},
		next:    []string{"resume"}, code: 0,
		reasons: map[string]string{`exec.member["m1"]`: "inputs changed since it succeeded (script)"},
	}, {
		name:    "resume after drift (refresh)",
		history: []step{run(1), {after: func(dir string) { touchGo(dir); remove(dir, "member.config") }}},
		next:    []string{"resume"}, code: 0,
		reasons: map[string]string{"kubeconfig.config": "drifted since it succeeded: member.config is gone"},
	}, {
		name:    "resume after drift, --refresh=false",
		history: []step{run(1), {after: func(dir string) { touchGo(dir); remove(dir, "member.config") }}},
		plan:    []string{"--refresh=false"},
		next:    []string{"resume", "--refresh=false"}, code: 0,
		reasons: map[string]string{"kubeconfig.config": "up to date"},
	}, {
		name:    "shrunk for_each",
		history: []step{{args: []string{"run", "main.hcl"}, code: 0, after: touchGo}},
		plan:    []string{"--var", `members=["m1"]`},
		next:    []string{"run", "main.hcl", "--var", `members=["m1"]`}, code: 0,
		reasons: map[string]string{`exec.member["m2"]`: "no longer in the flow (run 1 created it); undone first"},
	}, {
		name:    "shrunk for_each, --keep-removed",
		history: []step{{args: []string{"run", "main.hcl"}, code: 0, after: touchGo}},
		plan:    []string{"--var", `members=["m1"]`, "--keep-removed"},
		next:    []string{"run", "main.hcl", "--var", `members=["m1"]`, "--keep-removed"}, code: 0,
		reasons: map[string]string{`exec.member["m3"]`: "kept (--keep-removed)"},
	}, {
		// A targeted run that left the rest pending holds up nothing: a run without
		// targets starts anew, and the plan says so rather than previewing a resume.
		name:    "after a targeted run",
		history: []step{{args: []string{"run", "main.hcl", "--target", `exec.member["m1"]`}, code: 0}},
		next:    []string{"run", "main.hcl"}, code: 0,
		reasons: map[string]string{`exec.member["m1"]`: "again: succeeded in run 1", "exec.gate": "new since run 1"},
	}, {
		name:    "a targeted run after a targeted run",
		history: []step{{args: []string{"run", "main.hcl", "--target", `exec.member["m1"]`}, code: 0}},
		plan:    []string{"--target", "exec.gate"},
		next:    []string{"run", "main.hcl", "--target", "exec.gate"}, code: 0,
		reasons: map[string]string{`exec.member["m1"]`: "up to date: succeeded in run 1", `exec.member["m2"]`: "not run before"},
	}, {
		name:    "replace",
		history: []step{{args: []string{"run", "main.hcl"}, code: 0, after: touchGo}},
		plan:    []string{"--replace", `exec.member["m2"]`},
		next:    []string{"run", "main.hcl", "--replace", `exec.member["m2"]`}, code: 0,
		reasons: map[string]string{`exec.member["m2"]`: "replaced (--replace): undone, then run again", "exec.gate": `waits for exec.member["m2"]`},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tag, dir := newTag(t), t.TempDir()
			writeFiles(t, dir, map[string]string{"main.hcl": truthFlow, "src.config": probeKubeconfig(t)})
			for _, s := range tc.history {
				if s.code == 0 && s.args != nil {
					touchGo(dir) // a step meant to succeed gets past the gate
				}
				if s.args != nil {
					flowExit(t, tag, dir, s.code, s.args...)
				}
				if s.after != nil {
					s.after(dir)
				}
			}
			plan := flowExit(t, tag, dir, 0, append([]string{"plan", "main.hcl"}, tc.plan...)...)
			_, why := planned(plan.stdout)
			for addr, want := range tc.reasons {
				if !strings.Contains(why[addr], want) {
					t.Errorf("plan says of %s %q, want it to say %q\n%s", addr, why[addr], want, plan.stdout)
				}
			}
			comparePlan(t, plan, flowExit(t, tag, dir, tc.code, tc.next...))
		})
	}
}

func touchGo(dir string) { _ = os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) }

func remove(dir, name string) { _ = os.Remove(filepath.Join(dir, name)) }

// editFlow replaces old with new in dir's main.hcl.
func editFlow(dir, old, new string) {
	path := filepath.Join(dir, "main.hcl")
	b, _ := os.ReadFile(path)
	_ = os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644)
}

// TestReplaceUndoesFirst (issue 20, defect 5): --replace of an instance whose type can
// be undone runs its undo, then creates it again, as Terraform's -replace does.
func TestReplaceUndoesFirst(t *testing.T) {
	tag, dir := newTag(t), t.TempDir()
	writeFiles(t, dir, map[string]string{"main.hcl": truthFlow, "src.config": probeKubeconfig(t), "go": ""})
	flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m1"]`)
	r := flowExit(t, tag, dir, 0, "run", "main.hcl", "--var", `members=["m1"]`, "--replace", `exec.member["m1"]`)
	// A replace run starts from the checkpoints: run 1 created, run 2 undoes and creates.
	if got := readFile(t, filepath.Join(dir, "log.txt")); got != "create m1\nundo m1\ncreate m1\n" {
		t.Errorf("log.txt = %q, want create, undo, create\n%s", got, r.desc)
	}
	if !exists(filepath.Join(dir, "m1.marker")) {
		t.Errorf("m1.marker is gone after the replace\n%s", r.desc)
	}
}

// probeKubeconfig is the kubeconfig the kubeconfig task of truthFlow derives from.
func probeKubeconfig(t *testing.T) string {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return readFile(t, filepath.Join(root, "tasks/kube/testdata/probe.kubeconfig"))
}
