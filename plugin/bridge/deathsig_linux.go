package bridge

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGKILL the host when flow dies, even by SIGKILL
// (the host's plugins follow it the same way), and puts it in a process group of
// its own, so a Ctrl-C reaches flow alone.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
