package lxdtest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/flowdev/flow/internal/ci"
)

// ClusterHome is the lab cluster's directory, as scripts/lab-cluster.sh keeps it.
const ClusterHome = "/var/lib/flow-lab-cluster"

// ClusterImage is the image the tests bring into the cluster: the busybox lab's.
const ClusterImage = "flow-lab-busybox"

// Cluster is how a test reaches the lab cluster: three LXD daemons on 127.0.0.3, .4 and
// .5 that form one LXD cluster (members c1, c2, c3), reached over HTTPS through c1.
type Cluster struct {
	Address    string   // https://127.0.0.3:8443, c1's
	Members    []string // c1, c2, c3
	ClientCert string   // a client certificate the cluster trusts, and its key
	ClientKey  string
	ServerCert string // the cluster's certificate, pinned
}

// Remote is the `remote` map of an LXD task that talks to the cluster.
func (c Cluster) Remote() map[string]string {
	return map[string]string{"address": c.Address, "client_cert": c.ClientCert, "client_key": c.ClientKey, "server_cert": c.ServerCert}
}

// Lxc runs lxc against member c1's unix socket and returns its combined output.
func (c Cluster) Lxc(args ...string) (string, error) {
	return c.LxcOn(c.Members[0], args...)
}

// LxcOn runs lxc against member's own unix socket (as that machine's user would) and
// returns its combined output.
func (c Cluster) LxcOn(member string, args ...string) (string, error) {
	dir := filepath.Join(ClusterHome, member, "lxd")
	cmd := exec.Command("lxc", args...)
	cmd.Env = append(withoutEnv(os.Environ(), "LXD_DIR", "LXD_SOCKET"), "LXD_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("LXD_DIR=%s lxc %s: %w: %s", dir, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

var clusterOnce sync.Mutex

// StartCluster starts the lab cluster unless it runs (scripts/lab-cluster.sh start, with
// a client configuration of the tests' own under ClusterHome and only ClusterImage
// brought in) and holds a shared lock on it until the test ends. It skips the test when
// LXD is not installed, and fails it under CI.
func StartCluster(t testing.TB) Cluster {
	t.Helper()
	return startCluster(t, syscall.LOCK_SH)
}

// HoldCluster is StartCluster for a test that stops members' daemons: it waits until no
// other test uses the cluster and holds it alone (an exclusive lock) until the test
// ends, when every member is started again. The caller must not call StartCluster too.
func HoldCluster(t testing.TB) Cluster {
	t.Helper()
	c := startCluster(t, syscall.LOCK_EX)
	t.Cleanup(func() {
		if out, err := c.StartMembers(); err != nil {
			t.Errorf("start the lab cluster's members again: %v\n%s", err, out)
		}
	})
	return c
}

func startCluster(t testing.TB, mode int) Cluster {
	t.Helper()
	if _, err := exec.LookPath("lxd"); err != nil {
		if ci.Enabled() {
			t.Fatalf("the lab cluster needs lxd (CI=%s: scripts/lab-setup.sh installs it): %v", os.Getenv("CI"), err)
		}
		t.Skipf("the lab cluster needs lxd (scripts/lab-setup.sh installs it): %v", err)
	}
	unlock := lockIn(t, ClusterHome, mode)
	t.Cleanup(unlock)
	clusterOnce.Lock()
	defer clusterOnce.Unlock()
	if out, err := clusterScript("start"); err != nil {
		t.Fatalf("start the lab cluster: %v\n%s", err, out)
	}
	client := filepath.Join(ClusterHome, "client")
	return Cluster{
		Address:    "https://127.0.0.3:8443",
		Members:    []string{"c1", "c2", "c3"},
		ClientCert: filepath.Join(client, "client.crt"),
		ClientKey:  filepath.Join(client, "client.key"),
		ServerCert: filepath.Join(client, "servercerts", "lab-cluster.crt"),
	}
}

// WatchCreations listens to the lifecycle events of every member of c until the test
// ends, listening again to a member whose daemon went away as soon as it answers; the
// returned func counts the instance-created events of an instance so far. An event
// reaches a listener on its own member and, forwarded, on the others: each counts once.
func (c Cluster) WatchCreations(t testing.TB) func(name string) int {
	t.Helper()
	type event struct{ location, source, at string }
	var mu sync.Mutex
	seen := map[event]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	for _, m := range c.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if srv, err := lxdclient.ConnectLXDUnix(filepath.Join(ClusterHome, m, "lxd", "unix.socket"), nil); err == nil {
					if listener, err := srv.GetEvents(); err == nil {
						_, _ = listener.AddHandler([]string{api.EventTypeLifecycle}, func(e api.Event) {
							var lc api.EventLifecycle
							if json.Unmarshal(e.Metadata, &lc) == nil && lc.Action == api.EventLifecycleInstanceCreated {
								mu.Lock()
								seen[event{e.Location, lc.Source, e.Timestamp.String()}] = true
								mu.Unlock()
							}
						})
						done := make(chan struct{})
						go func() { _ = listener.Wait(); close(done) }()
						select {
						case <-stop:
							listener.Disconnect()
							return
						case <-done:
						}
					}
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	return func(name string) int {
		time.Sleep(time.Second) // events of the last moment
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for e := range seen {
			if strings.TrimPrefix(e.source, "/1.0/instances/") == name {
				n++
			}
		}
		return n
	}
}

// StartMembers starts every member whose daemon does not run (scripts/lab-cluster.sh
// start) and waits until the cluster answers; it returns the script's output. Safe to
// call from any goroutine.
func (c Cluster) StartMembers() (string, error) {
	return clusterScript("start")
}

// KillMember SIGKILLs member's daemon, as a crash would (its instances keep running, as
// they do when LXD dies), and waits until it is gone. The caller must hold the cluster
// alone (HoldCluster).
func (c Cluster) KillMember(t testing.TB, member string) {
	t.Helper()
	killDaemon(t, "cluster member "+member, filepath.Join(ClusterHome, member, "lxd.pid"))
}

// clusterScript runs scripts/lab-cluster.sh arg with the tests' client configuration
// and only ClusterImage brought in. The script's daemons are found by their LXD_DIR:
// a caller's LXD_DIR or LXD_SOCKET would point its checks at another daemon.
func clusterScript(arg string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "lab-cluster.sh"), arg)
	cmd.Env = append(withoutEnv(os.Environ(), "LXD_DIR", "LXD_SOCKET"),
		"LXD_CONF="+filepath.Join(ClusterHome, "client"), "LAB_CLUSTER_IMAGES="+ClusterImage)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// withoutEnv returns env without the variables named.
func withoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, n := range names {
			keep = keep && name != n
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}
