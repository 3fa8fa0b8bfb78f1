package preflight

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	lxdclient "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/flowdev/flow/tasks/internal/hostport"
	"github.com/flowdev/flow/tasks/process"
)

// ownership says which host ports this lab's LXD proxy devices listen on.
type ownership struct {
	proxies map[int]string // port -> `proxy device "api" of "member1"`
}

// lxdSocket is the unix socket the LXD client uses: LXD_SOCKET, LXD_DIR's, the
// snap's when it exists, else /var/lib/lxd's.
func lxdSocket() string {
	if s := os.Getenv("LXD_SOCKET"); s != "" {
		return s
	}
	if d := os.Getenv("LXD_DIR"); d != "" {
		return filepath.Join(d, "unix.socket")
	}
	if snap := "/var/snap/lxd/common/lxd/unix.socket"; fileExists(snap) {
		return snap
	}
	return "/var/lib/lxd/unix.socket"
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkLXD checks access to the daemon, that it answers, its storage and the
// default profile, and returns which ports the lab's instances already hold.
func (p *Preflight) checkLXD(ctx context.Context, r *report) *ownership {
	sock := lxdSocket()
	fi, err := os.Stat(sock)
	if err != nil {
		r.problem("LXD socket %s: %v (is the daemon installed and started? scripts/lab-setup.sh does both)", sock, err)
		return nil
	}
	if os.Geteuid() != 0 && syscall.Access(sock, 2 /* W_OK */) != nil {
		group := "its group"
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			if g, err := user.LookupGroupId(strconv.Itoa(int(st.Gid))); err == nil {
				group = fmt.Sprintf("group %q", g.Name)
			}
		}
		r.problem("no access to the LXD socket %s: run as root or join %s", sock, group)
		return nil
	}
	srv, err := lxdclient.ConnectLXDUnixWithContext(ctx, sock, &lxdclient.ConnectionArgs{UserAgent: "flow"})
	if err == nil {
		_, _, err = srv.GetServer()
	}
	if err != nil {
		r.problem("the LXD daemon does not answer on %s: %v", sock, err)
		return nil
	}
	r.ok("LXD daemon answers on %s", sock)
	pool := p.StoragePool
	if pool == "" {
		pool = "default"
	}
	if _, _, err := srv.GetStoragePool(pool); err != nil {
		r.problem("LXD storage pool %q: %v (create it: lxc storage create %s dir)", pool, err, pool)
	} else {
		r.ok("LXD storage pool %q exists", pool)
	}
	if prof, _, err := srv.GetProfile("default"); err != nil {
		r.problem("LXD profile \"default\": %v", err)
	} else if !hasRootDisk(prof.Devices) {
		r.problem("LXD profile \"default\" has no root disk (lxc profile device add default root disk path=/ pool=%s)", pool)
	} else {
		r.ok("LXD profile \"default\" has a root disk")
	}
	return p.lxdOwnership(srv, r)
}

func hasRootDisk(devices map[string]map[string]string) bool {
	for _, d := range devices {
		if d["type"] == "disk" && d["path"] == "/" {
			return true
		}
	}
	return false
}

// lxdOwnership lists the host ports the proxy devices of p.Instances listen on.
func (p *Preflight) lxdOwnership(srv lxdclient.InstanceServer, r *report) *ownership {
	own := &ownership{proxies: map[int]string{}}
	for _, name := range p.Instances {
		inst, _, err := srv.GetInstance(name)
		if api.StatusErrorCheck(err, http.StatusNotFound) {
			continue // not created yet: it holds nothing
		}
		if err != nil {
			r.problem("LXD instance %q: %v", name, err)
			continue
		}
		for dev, cfg := range inst.ExpandedDevices {
			if cfg["type"] != "proxy" {
				continue
			}
			_, addr, _ := strings.Cut(cfg["listen"], ":") // tcp:127.0.0.1:16441
			if _, port, err := net.SplitHostPort(addr); err == nil {
				if n, err := strconv.Atoi(port); err == nil {
					own.proxies[n] = fmt.Sprintf("proxy device %q of %q", dev, name)
				}
			}
		}
	}
	return own
}

// checkUserNamespace fails when flow runs in a user namespace that does not map
// every uid: LXD there cannot start privileged or nested containers.
func checkUserNamespace(r *report) {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		r.problem("privileged containers: read /proc/self/uid_map: %v", err)
		return
	}
	if f := strings.Fields(string(b)); len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295" {
		r.ok("not in a user namespace: privileged and nested containers are possible")
		return
	}
	r.problem("flow runs in a user namespace (uid_map %q): LXD cannot start the privileged, nested containers this lab needs", strings.TrimSpace(string(b)))
}

// checkPorts checks that every port is free or already this lab's.
func (p *Preflight) checkPorts(ctx context.Context, r *report, own *ownership) {
	if len(p.Ports) == 0 {
		return
	}
	ls, err := hostport.Listeners()
	if err != nil {
		r.problem("list listening sockets: %v", err)
		return
	}
	groups := p.recordedGroups(r)
	for _, port := range p.Ports {
		if ctx.Err() != nil {
			return
		}
		i := slices.IndexFunc(ls, func(l hostport.Listener) bool { return l.Port == port && l.BlocksLoopback() })
		if i < 0 {
			r.ok("port %d is free", port)
			continue
		}
		pid := hostport.Owner(ls[i].Inode)
		argv := hostport.CommandLine(pid)
		switch {
		case own != nil && own.proxies[port] != "" && hostport.IsLXDProxy(argv) && !hostport.ProxyOfLiveDaemon(pid):
			// After the daemon was killed, its forkproxy may outlive it and keep the port
			// while forwarding nowhere; the new daemon's device cannot listen then.
			r.problem("port %d is held by pid %d, a proxy left by an LXD daemon that is no longer running (its parent is now pid %d): it forwards nowhere; stop it (kill %d), then run again", port, pid, hostport.Parent(pid), pid)
		case own != nil && own.proxies[port] != "" && hostport.IsLXDProxy(argv):
			r.ok("port %d is already the lab's: %s", port, own.proxies[port])
		case pid != 0 && groups[mustGroup(pid)] != "":
			r.ok("port %d is already the lab's: pid %d, of %s", port, pid, groups[mustGroup(pid)])
		case pid == 0:
			r.problem("port %d on %s is in use by a process flow cannot see (another user's?)", port, ls[i].IP)
		default:
			r.problem("port %d on %s is held by pid %d (%s), which is not this lab's: stop it or change the port", port, ls[i].IP, pid, hostport.ShowCommand(argv))
		}
	}
}

// recordedGroups maps the process group of every running process of p.PIDFiles to
// its pid file.
func (p *Preflight) recordedGroups(r *report) map[int]string {
	groups := map[int]string{}
	for _, f := range p.PIDFiles {
		pgrp, ok, err := process.RecordedGroup(f)
		if err != nil {
			r.problem("%v", err)
		}
		if ok {
			groups[pgrp] = "pid file " + f
		}
	}
	return groups
}

// mustGroup is pid's process group, or -1 (never a recorded one) when unknown.
func mustGroup(pid int) int {
	g, err := process.Group(pid)
	if err != nil || g == 0 {
		return -1
	}
	return g
}

// checkResources checks free disk and available memory.
func (p *Preflight) checkResources(r *report) {
	if p.MinFreeDiskMB > 0 {
		path := p.DiskPath
		if path == "" {
			path = "/"
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(path, &st); err != nil {
			r.problem("free disk on %s: %v", path, err)
		} else if free := int(st.Bavail * uint64(st.Bsize) >> 20); free < p.MinFreeDiskMB {
			r.problem("%s has %d MiB free; the lab needs %d MiB", path, free, p.MinFreeDiskMB)
		} else {
			r.ok("%s has %d MiB free (needs %d)", path, free, p.MinFreeDiskMB)
		}
	}
	if p.MinMemoryMB > 0 {
		avail, err := memAvailableMB()
		switch {
		case err != nil:
			r.problem("available memory: %v", err)
		case avail < p.MinMemoryMB:
			r.problem("%d MiB of memory available; the lab needs %d MiB", avail, p.MinMemoryMB)
		default:
			r.ok("%d MiB of memory available (needs %d)", avail, p.MinMemoryMB)
		}
	}
}

// memAvailableMB reads MemAvailable from /proc/meminfo.
func memAvailableMB() (int, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				return 0, fmt.Errorf("malformed MemAvailable %q", rest)
			}
			return kb >> 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemAvailable")
}

// checkCNI reports CNI configurations with an IPv6 range: Karmada's etcd, in a
// member whose pod network has one, fails to start (seed 004).
func (p *Preflight) checkCNI(r *report) {
	for _, dir := range p.CNIConfigDirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.conf*"))
		bad := 0
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				r.problem("CNI configuration %s: %v", f, err)
				continue
			}
			var doc any
			if err := json.Unmarshal(b, &doc); err != nil {
				r.problem("CNI configuration %s is not JSON: %v", f, err)
				continue
			}
			if v6 := ipv6Ranges(doc); len(v6) > 0 {
				bad++
				r.problem("CNI configuration %s enables IPv6 (%s): Karmada's etcd fails on it; remove the IPv6 range", f, strings.Join(v6, ", "))
			}
		}
		if bad == 0 {
			r.ok("no IPv6 range in the CNI configurations of %s (%d files)", dir, len(files))
		}
	}
}

// ipv6Ranges returns the IPv6 subnets and ranges anywhere in a CNI document.
func ipv6Ranges(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if s, ok := v[k].(string); ok && (k == "subnet" || k == "rangeStart" || k == "rangeEnd") {
				if isIPv6(s) {
					out = append(out, s)
				}
				continue
			}
			out = append(out, ipv6Ranges(v[k])...)
		}
	case []any:
		for _, e := range v {
			out = append(out, ipv6Ranges(e)...)
		}
	}
	return out
}

// isIPv6 reports whether s is an IPv6 address or CIDR.
func isIPv6(s string) bool {
	ip := net.ParseIP(s)
	if cidrIP, _, err := net.ParseCIDR(s); err == nil {
		ip = cidrIP
	}
	return ip != nil && ip.To4() == nil
}
