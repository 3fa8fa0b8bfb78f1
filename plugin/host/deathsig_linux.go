package host

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the plugin when flow dies, even by
// SIGKILL, and puts it in a process group of its own, so a Ctrl-C reaches flow
// alone and flow ends its plugins itself.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
