package lxd

import "testing"

// Only LXD's forkproxy for this instance's init process, on exactly the declared address,
// is the remains of a lost device update; anything else holding the address is not ours.
func TestLostForkproxyValidate(t *testing.T) {
	const listen = "tcp:127.0.0.1:16541"
	lost := []string{"/usr/bin/lxd", "forkproxy", "--", "8200", "4", listen, "8503", "3", "tcp:127.0.0.1:8080", "", "", "0644", "", "", ""}
	tests := []struct {
		name string
		argv []string
		want bool
	}{
		{"the lost forkproxy", lost, true},
		{"another instance's", with(lost, 6, "9999"), false},
		{"another address", with(lost, 5, "tcp:127.0.0.1:16542"), false},
		{"not a forkproxy", with(lost, 1, "forkexec"), false},
		{"a stranger", []string{"/usr/bin/python3", "-m", "http.server", "16541"}, false},
		{"nothing", nil, false},
	}
	for _, tt := range tests {
		if got := isLostForkproxy(tt.argv, listen, 8503); got != tt.want {
			t.Errorf("%s: isLostForkproxy(%q) = %v, want %v", tt.name, tt.argv, got, tt.want)
		}
	}
}

func with(argv []string, i int, v string) []string {
	out := append([]string(nil), argv...)
	out[i] = v
	return out
}
