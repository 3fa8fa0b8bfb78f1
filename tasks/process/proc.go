package process

import (
	"strconv"
	"strings"

	"github.com/flowdev/flow/internal/procgroup"
)

// procInfo is what /proc says about one pid.
type procInfo = procgroup.Info

// inspect reads /proc/PID/stat (procgroup.Inspect).
func inspect(pid int) (procInfo, error) { return procgroup.Inspect(pid) }

// argvString shows an argv the way it is written in HCL: ["sleep", "30"].
func argvString(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
