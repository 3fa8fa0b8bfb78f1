//go:build !linux

package bridge

import "os/exec"

// setDeathSignal does nothing off Linux: the host ends when its connection does.
func setDeathSignal(*exec.Cmd) {}
