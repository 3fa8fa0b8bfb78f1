// Package kubetest starts real Kubernetes API servers for tests: Debian's etcd
// and a kube-apiserver (optionally a kube-controller-manager) built once per
// machine by scripts/k8s-bins.sh and cached by version. It owns those processes
// and their files in the test's temp dir; it does not build binaries.
//
// Without the binaries a test is skipped, except under CI (internal/ci), where a
// missing binary fails the test: make test builds them first.
package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/flowdev/flow/internal/ci"
)

// Pinned versions: the binaries under test and the flags karmadactl tasks are
// checked against.
const (
	KubeVersion    = "v1.31.4"
	KarmadaVersion = "v1.13.0"
)

// BinDir is where scripts/k8s-bins.sh caches binaries: $FLOW_BIN_CACHE, or
// ~/.cache/flow/bin.
func BinDir() string {
	if d := os.Getenv("FLOW_BIN_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "flow", "bin")
}

// Binary returns the path of a cached binary such as "kube-apiserver" at its
// pinned version, or "etcd" from PATH. It skips the test when the binary is
// missing, and fails it under CI.
func Binary(t testing.TB, name string) string {
	t.Helper()
	var path string
	switch name {
	case "etcd":
		path, _ = exec.LookPath("etcd")
	case "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy", "kubelet":
		path = filepath.Join(BinDir(), name+"-"+KubeVersion)
	default:
		path = filepath.Join(BinDir(), name+"-"+KarmadaVersion)
	}
	if path != "" {
		if _, err := os.Stat(path); err == nil {
			return path
		}
	}
	msg := fmt.Sprintf("%s is missing (run scripts/k8s-bins.sh)", name)
	if ci.Enabled() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Server is a running etcd + kube-apiserver pair, stopped at test cleanup.
type Server struct {
	URL        string // https://127.0.0.1:PORT
	Token      string // bearer token of an admin in system:masters
	CAFile     string // the server's self-signed certificate, which is its own CA
	Kubeconfig string // a kubeconfig file for the admin, context "kubetest"
	Dir        string // data, certificates and logs
	SAKey      string // service-account signing key (PEM)
	Config     *rest.Config

	apiserver *process // the running kube-apiserver, replaced by RestartAPIServer
}

// Options select what Start runs besides etcd and kube-apiserver.
type Options struct {
	// ControllerManager runs kube-controller-manager's service-account token
	// controllers, which karmadactl join needs.
	ControllerManager bool
	// Controllers are further kube-controller-manager controllers, such as
	// "job-controller"; they imply ControllerManager.
	Controllers []string
	// APIServerArgs are further kube-apiserver flags, kept by RestartAPIServer.
	APIServerArgs []string
}

// Start runs etcd and a kube-apiserver on free loopback ports and waits until
// /readyz answers ok. Everything stops at test cleanup.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	apiserver, etcd := Binary(t, "kube-apiserver"), Binary(t, "etcd")
	var kcm string
	if opts.ControllerManager || len(opts.Controllers) > 0 {
		kcm = Binary(t, "kube-controller-manager")
	}
	dir := t.TempDir()
	s := &Server{Dir: dir, Token: randomHex(t), SAKey: filepath.Join(dir, "sa.key")}
	saPub := filepath.Join(dir, "sa.pub")
	writeServiceAccountKeys(t, s.SAKey, saPub)
	mustWrite(t, filepath.Join(dir, "tokens.csv"), s.Token+",admin,admin,system:masters\n")

	ports := freePorts(t, 3)
	etcdURL := "http://127.0.0.1:" + ports[0]
	startProcess(t, dir, "etcd", etcd,
		"--data-dir", filepath.Join(dir, "etcd"), "--name", "default",
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:"+ports[1],
		"--initial-advertise-peer-urls", "http://127.0.0.1:"+ports[1],
		"--initial-cluster", "default=http://127.0.0.1:"+ports[1])

	certDir := filepath.Join(dir, "certs")
	s.apiserver = startProcess(t, dir, "kube-apiserver", apiserver, append([]string{
		"--advertise-address=127.0.0.1", "--bind-address=127.0.0.1", "--secure-port=" + ports[2],
		"--etcd-servers=" + etcdURL, "--cert-dir=" + certDir,
		"--token-auth-file=" + filepath.Join(dir, "tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saPub, "--service-account-signing-key-file=" + s.SAKey,
		"--authorization-mode=RBAC", "--service-cluster-ip-range=10.96.0.0/16"}, opts.APIServerArgs...)...)
	s.URL = "https://127.0.0.1:" + ports[2]
	s.CAFile = filepath.Join(certDir, "apiserver.crt")
	s.waitReady(t)
	s.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := clientcmd.WriteToFile(*s.KubeconfigAPI("kubetest"), s.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	if kcm != "" {
		startProcess(t, dir, "kube-controller-manager", kcm,
			"--kubeconfig="+s.Kubeconfig, "--leader-elect=false",
			"--controllers="+strings.Join(append([]string{"serviceaccount-token-controller", "serviceaccount-controller", "namespace-controller"}, opts.Controllers...), ","),
			"--service-account-private-key-file="+s.SAKey, "--root-ca-file="+s.CAFile,
			"--bind-address=127.0.0.1", "--secure-port=0")
	}
	return s
}

// KubeconfigAPI returns an admin kubeconfig for s whose cluster, user and
// context are all called name.
func (s *Server) KubeconfigAPI(name string) *clientcmdapi.Config {
	ca, _ := os.ReadFile(s.CAFile)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: s.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return cfg
}

// Clientset returns a typed client for s.
func (s *Server) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Dynamic returns a dynamic client for s.
func (s *Server) Dynamic(t testing.TB) *dynamic.DynamicClient {
	t.Helper()
	c, err := dynamic.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *Server) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if _, err := os.Stat(s.CAFile); err == nil {
			s.Config = &rest.Config{Host: s.URL, BearerToken: s.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: s.CAFile}}
			c, err := kubernetes.NewForConfig(s.Config)
			if err == nil {
				body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
				if err == nil && string(body) == "ok" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(s.Dir, "kube-apiserver.log"))
			t.Fatalf("kube-apiserver at %s not ready after 90s; its log ends:\n%s", s.URL, tail(log, 3000))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// process is a program startProcess started: its command line, to start it again.
type process struct {
	dir, name, bin string
	args           []string
	cmd            *exec.Cmd
	stopped        chan struct{} // closed once cmd was waited for
}

// startProcess runs bin in its own process group with output in DIR/NAME.log;
// cleanup kills the group and waits for it.
func startProcess(t testing.TB, dir, name, bin string, args ...string) *process {
	t.Helper()
	p := &process{dir: dir, name: name, bin: bin, args: args}
	p.start(t)
	return p
}

func (p *process) start(t testing.TB) {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(p.dir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	stopped := make(chan struct{})
	p.cmd, p.stopped = cmd, stopped
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(stopped)
	}()
	t.Cleanup(func() { p.kill(cmd, stopped) })
}

// kill SIGKILLs the process group of cmd (ours: started by start) and waits for it.
func (p *process) kill(cmd *exec.Cmd, stopped chan struct{}) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-stopped
}

// RestartAPIServer SIGKILLs the kube-apiserver (its own process group, by the pid
// Start recorded), waits down, and starts it again with the same flags: same port,
// certificates and etcd, as a crashed or upgraded API server comes back. It returns
// once /readyz answers again; clients meet refused connections until it listens. It
// may run in a goroutine of its own while the test waits on something else; a failure
// to start then ends only that goroutine (close what the test waits on in a defer).
func (s *Server) RestartAPIServer(t testing.TB, down time.Duration) {
	p := s.apiserver
	p.kill(p.cmd, p.stopped)
	time.Sleep(down)
	p.start(t)
	s.waitReady(t)
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var ports []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func writeServiceAccountKeys(t testing.TB, keyPath, pubPath string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, keyPath, string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})))
	mustWrite(t, pubPath, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func randomHex(t testing.TB) string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
