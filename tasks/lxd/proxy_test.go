package lxd

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestProxyDeviceValidate(t *testing.T) {
	ok := ProxyDevice{Instance: "m1", Name: "api", Listen: "tcp:127.0.0.1:16441", Connect: "tcp:127.0.0.1:16443"}
	with := func(f func(*ProxyDevice)) *ProxyDevice {
		p := ok
		f(&p)
		return &p
	}
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "tcp", Task: with(func(p *ProxyDevice) {})},
		{Name: "everything", Task: with(func(p *ProxyDevice) {
			p.Bind, p.NAT, p.Extra, p.Recreate = "host", true, map[string]string{"proxy_protocol": "true"}, true
		})},
		{Name: "instance side, unix", Task: with(func(p *ProxyDevice) {
			p.Bind, p.Listen, p.Connect = "instance", "unix:/run/docker.sock", "unix:/run/docker.sock"
		})},
		{Name: "ipv6", Task: with(func(p *ProxyDevice) { p.Listen = "tcp:[::1]:80" })},
		{Name: "bad remote", Task: with(func(p *ProxyDevice) { p.Remote = map[string]string{"client_cert": "c"} }), Attr: "remote", Msg: "only used with address"},
		{Name: "no instance", Task: with(func(p *ProxyDevice) { p.Instance = "" }), Attr: "instance", Msg: "must not be empty"},
		{Name: "bad instance name", Task: with(func(p *ProxyDevice) { p.Instance = "m 1" }), Attr: "instance", Msg: "only letters, digits and hyphens"},
		{Name: "no name", Task: with(func(p *ProxyDevice) { p.Name = "" }), Attr: "name", Msg: "must not be empty"},
		{Name: "no protocol", Task: with(func(p *ProxyDevice) { p.Listen = "127.0.0.1:80" }), Attr: "listen", Msg: `protocol "127.0.0.1" must be tcp, udp or unix`},
		{Name: "no port", Task: with(func(p *ProxyDevice) { p.Listen = "tcp:127.0.0.1" }), Attr: "listen", Msg: "must give an address and a port"},
		{Name: "port range", Task: with(func(p *ProxyDevice) { p.Listen = "tcp:127.0.0.1:80-90" }), Attr: "listen", Msg: "port ranges and lists are not supported"},
		{Name: "port zero", Task: with(func(p *ProxyDevice) { p.Connect = "tcp:127.0.0.1:0" }), Attr: "connect", Msg: "from 1 to 65535"},
		{Name: "empty connect", Task: with(func(p *ProxyDevice) { p.Connect = "" }), Attr: "connect", Msg: "must look like"},
		{Name: "bad bind", Task: with(func(p *ProxyDevice) { p.Bind = "guest" }), Attr: "bind", Msg: `"guest" must be "host" or "instance"`},
		{Name: "nat with instance bind", Task: with(func(p *ProxyDevice) { p.NAT, p.Bind = true, "instance" }), Attr: "nat", Msg: "needs bind \"host\""},
		{Name: "extra sets listen", Task: with(func(p *ProxyDevice) { p.Extra = map[string]string{"listen": "x"} }), Attr: "extra", Msg: `key "listen"`},
	})
}

func TestProxyDeviceType(t *testing.T) {
	taskstest.CheckType(t, proxyDeviceType(), map[string]cty.Type{"address": cty.String, "port": cty.Number, "listen": cty.String})
	taskstest.CheckExample(t, proxyDeviceType(), exampleVars)
}

// freePort returns a loopback TCP port that nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// serveInside starts busybox httpd inside inst on 127.0.0.1:port, serving
// body as /index.html.
func serveInside(t *testing.T, inst string, port int, body string) {
	t.Helper()
	dir := fmt.Sprintf("/www%d", port)
	inside(t, inst, fmt.Sprintf("mkdir -p %s && echo %s > %s/index.html && { netstat -ltn | grep -q 127.0.0.1:%d || httpd -p 127.0.0.1:%d -h %s; }", dir, body, dir, port, port, dir))
}

// getThrough fetches index.html from the host port.
func getThrough(t *testing.T, port int) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
	if err != nil {
		t.Fatalf("GET through the proxy: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

func TestProxyDeviceCarriesTrafficThenAlreadyPresent(t *testing.T) {
	inst := launchTestInstance(t)
	serveInside(t, inst, 8080, "hello-through-proxy")
	port := freePort(t)
	listen := fmt.Sprintf("tcp:127.0.0.1:%d", port)
	proxy := &ProxyDevice{Instance: inst, Name: "web", Listen: listen, Connect: "tcp:127.0.0.1:8080"}

	out, printed := mustValidateAndRun(t, proxy)
	if !strings.Contains(printed, `added proxy "web" on "`+inst+`": `+listen+" -> tcp:127.0.0.1:8080") {
		t.Errorf("output:\n%s", printed)
	}
	if got := getThrough(t, port); got != "hello-through-proxy" {
		t.Errorf("GET = %q", got)
	}
	if got, want := outStr(t, out, "address"), "127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Errorf("address = %q, want %q", got, want)
	}
	if got := outNum(t, out, "port"); got != int64(port) {
		t.Errorf("port = %d, want %d", got, port)
	}
	if got := outStr(t, out, "listen"); got != listen {
		t.Errorf("listen = %q", got)
	}

	// Its own device holds the port: that is no conflict.
	_, printed = mustValidateAndRun(t, proxy)
	if !strings.Contains(printed, `proxy "web" on "`+inst+`" already present`) || strings.Contains(printed, "added") {
		t.Errorf("re-run output:\n%s", printed)
	}
	// A device added by the CLI without bind matches a declaration with the default.
	lxc(t, "config", "device", "remove", inst, "web")
	lxc(t, "config", "device", "add", inst, "web", "proxy", "listen="+listen, "connect=tcp:127.0.0.1:8080")
	if _, printed := mustValidateAndRun(t, proxy); !strings.Contains(printed, "already present") {
		t.Errorf("run after lxc config device add:\n%s", printed)
	}
}

func TestProxyDeviceDiffersFailsThenRecreateReplaces(t *testing.T) {
	inst := launchTestInstance(t)
	serveInside(t, inst, 8080, "first")
	serveInside(t, inst, 8081, "second")
	port := freePort(t)
	proxy := &ProxyDevice{Instance: inst, Name: "web", Listen: fmt.Sprintf("tcp:127.0.0.1:%d", port), Connect: "tcp:127.0.0.1:8080"}
	mustValidateAndRun(t, proxy)
	if got := getThrough(t, port); got != "first" {
		t.Fatalf("GET = %q", got)
	}

	proxy.Connect = "tcp:127.0.0.1:8081"
	_, _, err := validateAndRun(t, proxy)
	want := `proxy "web" on "` + inst + `": exists but differs from the declaration: key "connect": device has "tcp:127.0.0.1:8080", declared "tcp:127.0.0.1:8081" (set recreate = true to replace it)`
	if err == nil || err.Error() != want {
		t.Fatalf("Run error = %v\nwant %s", err, want)
	}
	if got := getThrough(t, port); got != "first" {
		t.Errorf("after the refused change GET = %q, want the old device untouched", got)
	}

	proxy.Recreate = true
	_, printed := mustValidateAndRun(t, proxy)
	if !strings.Contains(printed, `replaced proxy "web"`) {
		t.Errorf("output:\n%s", printed)
	}
	if got := getThrough(t, port); got != "second" {
		t.Errorf("after recreate GET = %q, want %q", got, "second")
	}
}

func TestProxyDeviceBusyPort(t *testing.T) {
	inst := launchTestInstance(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	_, _, err = validateAndRun(t, &ProxyDevice{Instance: inst, Name: "api", Listen: "tcp:" + addr, Connect: "tcp:127.0.0.1:8080"})
	want := `proxy "api" on "` + inst + `": listen address ` + addr + ` is already in use`
	if err == nil || err.Error() != want {
		t.Errorf("Run error = %v\nwant %s", err, want)
	}
	if devices := lxc(t, "config", "device", "list", inst); strings.TrimSpace(devices) != "" {
		t.Errorf("devices after the failure: %q, want none", devices)
	}
}

func TestProxyDeviceUnknownInstance(t *testing.T) {
	name := testName("nosuch")
	_, _, err := validateAndRun(t, &ProxyDevice{Instance: name, Name: "api", Listen: fmt.Sprintf("tcp:127.0.0.1:%d", freePort(t)), Connect: "tcp:127.0.0.1:80"})
	if want := `proxy "api" on "` + name + `": instance not found`; err == nil || err.Error() != want {
		t.Errorf("Run error = %v, want %q", err, want)
	}
}

// Devices added to one instance in parallel (for_each) must all land, though
// each update races with the others.
func TestProxyDeviceParallelOnOneInstance(t *testing.T) {
	inst := launchTestInstance(t)
	serveInside(t, inst, 8080, "parallel")
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var wg sync.WaitGroup
	errs := make([]error, len(ports))
	for i, port := range ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, _ := taskstest.NewEnv(t)
			p := &ProxyDevice{Instance: inst, Name: fmt.Sprintf("p%d", i), Listen: fmt.Sprintf("tcp:127.0.0.1:%d", port), Connect: "tcp:127.0.0.1:8080"}
			_, errs[i] = p.Run(t.Context(), env)
		}()
	}
	wg.Wait()
	for i, port := range ports {
		if errs[i] != nil {
			t.Errorf("device p%d: %v", i, errs[i])
			continue
		}
		if got := getThrough(t, port); got != "parallel" {
			t.Errorf("GET through p%d = %q", i, got)
		}
	}
}
