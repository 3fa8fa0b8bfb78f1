package lxd

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestTransientFault(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"lost operation", fmt.Errorf("launch %q: operation %s: %w", "m1", "abc", errOperationLost), "operation lost (LXD restarted)"},
		{"exec cut", fmt.Errorf("exec in %q: %w", "m1", errExecCut), "exec killed when its LXD connection dropped"},
		{"reset", fmt.Errorf("launch: %w", syscall.ECONNRESET), "connection reset"},
		{"LXD's flattened socket error", errors.New(`Get "http://unix.socket/1.0": dial unix /var/lib/lxd/unix.socket: connect: no such file or directory`), "socket missing"},
		{"dropped event websocket", errors.New("websocket: close 1006 (abnormal closure): unexpected EOF"), "websocket dropped"},
		// A command's output may say anything: its exit code is a result.
		{"exit code whose output names a refusal", &resultError{errors.New(`exec in "m1": exit code 7: wget: can't connect to remote host (127.0.0.1): connection refused`)}, ""},
		{"wait_for that never passed", fmt.Errorf("launch: %w", &resultError{errors.New("wait_for did not exit 0; output: connection reset by peer")}), ""},
		{"cluster member back, its events not yet joined", errors.New(`launch "lab-registry": get instance: Missing event connection with target cluster member`), "cluster member reconnecting (it restarted)"},
		{"not found", errors.New("Instance not found"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := transientFault(tt.err); got != tt.want {
				t.Errorf("transientFault(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
