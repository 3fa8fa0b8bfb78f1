package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// readBuildInfo is debug.ReadBuildInfo; tests replace it.
var readBuildInfo = debug.ReadBuildInfo

// versionText is what `flow version` and `flow --version` print: the module's
// version, the VCS revision it was built from and whether the tree had local
// changes (when the build recorded them), and the Go version, platform included.
//
//	flow v1.4.0 (revision 3f9c2a1b7d4e, modified) go1.26.8 linux/amd64
func versionText() string {
	version, revision, modified := "(devel)", "", false
	goVersion := runtime.Version()
	if info, ok := readBuildInfo(); ok && info != nil {
		if v := info.Main.Version; v != "" {
			version = v
		}
		if info.GoVersion != "" {
			goVersion = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "flow %s", version)
	if revision != "" {
		if len(revision) > 12 {
			revision = revision[:12]
		}
		fmt.Fprintf(&b, " (revision %s", revision)
		if modified {
			b.WriteString(", modified")
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, " %s %s/%s\n", goVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}

func (c *CLI) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print flow's version, the revision it was built from and its Go version",
		Long: `Print the version of the flow module, the VCS revision it was built from (with
"modified" when the tree had uncommitted changes) when the build recorded it, and the Go
version and platform it was built with. "flow --version" prints the same.`,
		Example: "  flow version\n  flow --version",
		Args:    exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprint(c.stdout, versionText())
			return err
		},
	}
}
