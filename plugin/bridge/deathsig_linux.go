package bridge

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel SIGTERM the host when flow dies, even by SIGKILL:
// the host catches it and SIGKILLs its plugins' process groups before it exits (a
// SIGKILL of the host itself would leave what the plugins started running). It puts
// the host in a process group of its own, so a Ctrl-C reaches flow alone.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
