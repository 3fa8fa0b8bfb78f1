package lxd

import (
	"errors"
	"fmt"
	"strings"
)

// configDiffs lists how have differs from want, one readable line per key, in
// key order. what names the collection ("config", `device "data"`) and owner
// names the object that holds have ("profile", "instance"). With exact set,
// keys that only have holds count too; otherwise only the declared keys are
// compared (LXD adds volatile.* keys of its own to instances). A declared ""
// matches an absent key: LXD stores no empty values, "" unsets a key.
func configDiffs(what, owner string, have, want map[string]string, exact bool) []string {
	var diffs []string
	for _, k := range sortedKeys(want) {
		got, ok := have[k]
		switch {
		case !ok && want[k] == "":
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s %q: %s does not set it, declared %q", what, k, owner, want[k]))
		case got != want[k]:
			diffs = append(diffs, fmt.Sprintf("%s %q: %s has %q, declared %q", what, k, owner, got, want[k]))
		}
	}
	if exact {
		for _, k := range sortedKeys(have) {
			if _, ok := want[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s %q: %s has %q, not declared", what, k, owner, have[k]))
			}
		}
	}
	return diffs
}

// deviceDiffs compares devices the way configDiffs compares keys: a declared
// device must exist with exactly the declared keys. With exact set, a device
// that only have holds is a difference too.
func deviceDiffs(owner string, have, want map[string]map[string]string, exact bool) []string {
	var diffs []string
	for _, name := range sortedKeys(want) {
		got, ok := have[name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("device %q: declared, but the %s has no such device", name, owner))
			continue
		}
		diffs = append(diffs, configDiffs(fmt.Sprintf("device %q key", name), owner, got, want[name], true)...)
	}
	if exact {
		for _, name := range sortedKeys(have) {
			if _, ok := want[name]; !ok {
				diffs = append(diffs, fmt.Sprintf("device %q: the %s has it, not declared", name, owner))
			}
		}
	}
	return diffs
}

// differsError is the error for an object that exists but does not match its
// declaration and may not be replaced.
func differsError(diffs []string) error {
	return fmt.Errorf("exists but differs from the declaration: %s (set recreate = true to replace it)", joinDiffs(diffs))
}

func joinDiffs(diffs []string) string { return strings.Join(diffs, "; ") }

// validateDevices checks declared devices offline: every device needs a name
// and a type.
func validateDevices(devices map[string]map[string]string) error {
	for _, name := range sortedKeys(devices) {
		if name == "" {
			return errors.New("device names must not be empty")
		}
		if devices[name]["type"] == "" {
			return fmt.Errorf("device %q needs a type (e.g. disk, proxy)", name)
		}
	}
	return nil
}
