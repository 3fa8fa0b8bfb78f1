// Package hostport finds who listens on a TCP port of this host: the listening sockets
// from /proc/net/tcp and tcp6, the process holding a socket, and its command line. It
// owns reading /proc; what to make of a holder (the lab's own, LXD's, a stranger) is
// its callers' business (tasks/preflight, tasks/lxd).
package hostport

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener is a listening TCP socket of the host, from /proc/net/tcp or tcp6.
type Listener struct {
	IP    net.IP
	Port  int
	Inode string
}

// Listeners reads every listening TCP socket of the network namespace.
func Listeners() ([]Listener, error) {
	var all []Listener
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(name)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ls, err := parseProcNetTCP(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		all = append(all, ls...)
	}
	return all, nil
}

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// parseProcNetTCP reads the LISTEN lines of /proc/net/tcp or tcp6:
// "sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...",
// where local_address is the address in hex, in host byte order per 32-bit word,
// a colon and the port in hex.
func parseProcNetTCP(b []byte) ([]Listener, error) {
	var out []Listener
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != tcpListen {
			continue
		}
		addr, portHex, ok := strings.Cut(f[1], ":")
		port, err := strconv.ParseUint(portHex, 16, 16)
		if !ok || err != nil {
			return nil, fmt.Errorf("malformed local address %q", f[1])
		}
		ip, err := parseHexIP(addr)
		if err != nil {
			return nil, err
		}
		out = append(out, Listener{IP: ip, Port: int(port), Inode: f[9]})
	}
	return out, sc.Err()
}

// parseHexIP decodes /proc/net's address: 32-bit words, each little-endian.
func parseHexIP(s string) (net.IP, error) {
	raw, err := hex.DecodeString(s)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil, fmt.Errorf("malformed address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	return net.IP(raw), nil
}

// BlocksLoopback reports whether a listener keeps the lab from binding
// 127.0.0.1:port: it listens there, or on every address.
func (l Listener) BlocksLoopback() bool {
	return l.IP.IsUnspecified() || l.IP.Equal(net.IPv4(127, 0, 0, 1))
}

// Owner finds a process holding the socket inode open, by reading the
// /proc/PID/fd links ("socket:[INODE]"); 0 when none is visible (another user's
// process without root, or a socket only the kernel holds).
func Owner(inode string) int {
	want := "socket:[" + inode + "]"
	pids, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range pids {
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue // gone meanwhile, or not ours to read
		}
		for _, fd := range fds {
			if link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && link == want {
				pid, _ := strconv.Atoi(filepath.Base(dir))
				return pid
			}
		}
	}
	return 0
}

// CommandLine returns pid's argv, or nil when the process is gone.
func CommandLine(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// Parent returns pid's parent pid, or 0 when the process is gone.
func Parent(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// IsLXDProxy reports whether argv is LXD's forkproxy, the process behind a proxy device.
func IsLXDProxy(argv []string) bool {
	return len(argv) > 1 && filepath.Base(argv[0]) == "lxd" && argv[1] == "forkproxy"
}

// ProxyOfLiveDaemon reports whether the forkproxy pid belongs to the running LXD daemon:
// its parent is an LXD daemon. A forkproxy left by a daemon that was killed has been
// handed to another parent (init), and forwards into a device the new daemon does not know.
func ProxyOfLiveDaemon(pid int) bool {
	argv := CommandLine(Parent(pid))
	return len(argv) > 0 && filepath.Base(argv[0]) == "lxd" && !IsLXDProxy(argv)
}

// ShowCommand shortens an argv for a message: the program's base name and at
// most a few arguments.
func ShowCommand(argv []string) string {
	if len(argv) == 0 {
		return "(unknown command)"
	}
	shown := append([]string{filepath.Base(argv[0])}, argv[1:min(len(argv), 4)]...)
	s := strings.Join(shown, " ")
	if len(argv) > 4 {
		s += " ..."
	}
	return s
}

// Holder returns the pid and command line of the process listening on port where it
// would keep 127.0.0.1:port from being bound; pid 0 when nothing listens there or the
// holder is not visible.
func Holder(port int) (int, []string, error) {
	ls, err := Listeners()
	if err != nil {
		return 0, nil, err
	}
	for _, l := range ls {
		if l.Port == port && l.BlocksLoopback() {
			pid := Owner(l.Inode)
			return pid, CommandLine(pid), nil
		}
	}
	return 0, nil, nil
}
