package host

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the plugin when its host dies, and puts it
// in a process group of its own, which the host ends with it (what the plugin started
// is in it), so a Ctrl-C reaches flow alone and flow ends its plugins itself.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
