package lxd

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"time"

	lxdclient "github.com/canonical/lxd/client"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/hostport"
)

// A daemon killed while it added a proxy device may already have started the device's
// forkproxy without having recorded the device. After its restart the instance has no
// such device, yet the address is taken: by LXD's forkproxy for this very instance (its
// target is the instance's init process) on exactly the declared listen address. That
// process is the remains of our own lost update, and nothing else will ever stop it (the
// restarted daemon does not know it), so it is stopped by its pid and the device is added
// anew. Any other holder of the address is an error, as before.

// stopLostForkproxy stops such a process and reports whether the address is free now.
func (p *ProxyDevice) stopLostForkproxy(ctx context.Context, env *tasks.Env, srv lxdclient.InstanceServer, listen proxyAddress) bool {
	st, _, err := srv.GetInstanceState(p.Instance)
	if err != nil || st.Pid == 0 {
		return false
	}
	pid, argv, err := hostport.Holder(listen.port)
	if err != nil || pid == 0 || !isLostForkproxy(argv, p.Listen, st.Pid) {
		return false
	}
	fmt.Fprintf(env.Stdout, "stopping LXD's forkproxy (pid %d) on %s for %q: a device update the daemon lost when it restarted\n",
		pid, listen.address, p.Instance)
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return false
	}
	deadline := time.Now().Add(5 * time.Second)
	for addressInUse(listen.address) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// isLostForkproxy reports whether argv is LXD's forkproxy listening on listen for the
// instance whose init process is initPID:
// lxd forkproxy -- DAEMON_PID FD LISTEN TARGET_PID FD CONNECT ...
func isLostForkproxy(argv []string, listen string, initPID int64) bool {
	return len(argv) > 6 && argv[1] == "forkproxy" && argv[2] == "--" &&
		argv[5] == listen && argv[6] == strconv.FormatInt(initPID, 10)
}
