package python

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/flowdev/flow/plugin/host"
	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

// needPython fails the test when Debian's python3 has no grpc (CI installs it).
func needPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("/usr/bin/python3", "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Fatalf("python3-grpcio is missing (bash scripts/apt-install.sh python3-grpcio python3-protobuf): %v\n%s", err, out)
	}
}

// TestSDKServesGoPlugin: a plugin on flow_plugin answers go-plugin's side of the
// protocol: the socket in PLUGIN_UNIX_SOCKET_DIR, the health check, stray prints on
// stderr instead of stdout, and the controller's Shutdown, after which it exits 0 by
// itself (go-plugin would otherwise wait 2 s and kill it).
func TestSDKServesGoPlugin(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "plugin")
	sdk, _ := filepath.Abs(".")
	src := "#!/usr/bin/python3\nimport sys\nsys.path.insert(0, " + pyQuote(sdk) + ")\n" +
		"import flow_plugin as fp\n" +
		"def run(task, ctx):\n    print('stray print')\n    return {}\n" +
		"print('before serve')\n" +
		"fp.serve([fp.TaskType('t', run=run)])\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a hang fails, not a speed bound
	defer cancel()
	cmd := exec.CommandContext(ctx, script)
	cmd.Env = append(os.Environ(), "FLOW_PLUGIN=task-types", "PLUGIN_UNIX_SOCKET_DIR="+sockDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var handshake string
	if lines.Scan() {
		handshake = lines.Text()
	}
	f := strings.Split(handshake, "|")
	if len(f) != 5 || f[1] != "2" || f[2] != "unix" || filepath.Dir(f[3]) != sockDir || f[4] != "grpc" {
		t.Fatalf("handshake %q: want 1|2|unix|%s/...|grpc", handshake, sockDir)
	}
	conn, err := grpc.NewClient("unix:"+f[3], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: "plugin"})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", h, err)
	}
	if err := conn.Invoke(ctx, "/plugin.GRPCController/Shutdown", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Logf("Shutdown: %v (the plugin may exit before its answer arrives)", err)
	}
	rest := new(strings.Builder)
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the plugin did not exit 0 after Shutdown: %v; stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "before serve") {
		t.Errorf("stderr %q: want the print before serve() there", stderr.String())
	}
	if rest.Len() != 0 {
		t.Errorf("stdout after the handshake: %q, want nothing (go-plugin discards it)", rest)
	}
	entries, _ := os.ReadDir(sockDir)
	if len(entries) != 0 {
		t.Logf("socket dir after exit: %v (go-plugin removes the directory)", entries)
	}
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestProtocol1Plugin: flow still serves a plugin of protocol 1 (no Probe): its types
// load, and a recorded success is probed by its Check, as protocol 1 said (a file
// with other content is then "gone", Check's Absent, where protocol 2's Probe says it
// differs).
func TestProtocol1Plugin(t *testing.T) {
	needPython(t)
	dir := t.TempDir()
	jsonfile, _ := filepath.Abs("flow-plugin-jsonfile")
	script := filepath.Join(dir, "v1-plugin")
	src := "#!/usr/bin/python3\nimport runpy, sys\nsys.path.insert(0, " + pyQuote(filepath.Dir(jsonfile)) + ")\n" +
		"import flow_plugin\nflow_plugin.PROTOCOL_VERSION = 1\n" +
		"runpy.run_path(" + pyQuote(jsonfile) + ", run_name='__main__')\n"
	if err := os.WriteFile(script, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	proc := host.NewProcess("v1", script, nil)
	t.Cleanup(proc.Kill)
	types, err := proc.Types(t.Context())
	if err != nil || len(types) != 1 {
		t.Fatalf("types %v, %v", types, err)
	}
	task := types[0].New()
	values := map[string]cty.Value{"path": cty.StringVal("v.json"), "value": cty.NumberIntVal(1), "indent": cty.NullVal(cty.Number)}
	if err := tasks.Decode(task, values); err != nil {
		t.Fatal(err)
	}
	env, _ := taskstest.NewEnv(t)
	out, err := task.Run(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("v.json", []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if drift, err := task.(tasks.Prober).Probe(t.Context(), env, out); err != nil || drift != "it is gone" {
		t.Errorf("Probe of a protocol 1 plugin = %q, %v; want Check's answer, %q", drift, err, "it is gone")
	}
}
