// Package ci tells the tests whether they run under CI, where a missing
// dependency (an LXD daemon, a binary, root) must fail a test instead of
// skipping it. It is imported only by tests and test helpers.
package ci

import (
	"os"
	"strings"
)

// Enabled reports whether the environment variable CI asks for CI behaviour:
// any value but "" (or unset), "0" and "false" (in any case) does. CI systems
// set CI=true, others CI=1 or CI=True; reading only "true" as CI would let such
// a value turn every failure of a missing dependency back into a skip.
func Enabled() bool {
	return enabled(os.Getenv("CI"))
}

func enabled(v string) bool {
	v = strings.TrimSpace(v)
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}
