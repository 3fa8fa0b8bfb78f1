//go:build !linux

package host

import "os/exec"

// setDeathSignal does nothing off Linux: go-plugin's cleanup ends plugins there.
func setDeathSignal(*exec.Cmd) {}
