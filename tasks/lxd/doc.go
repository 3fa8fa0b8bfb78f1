// Package lxd owns the LXD task types: profiles, instances, exec, file transfer,
// proxy devices, image import and teardown, all through
// github.com/canonical/lxd/client against a local unix socket or a named HTTPS
// remote. It does not own readiness checks (package wait) or scheduling.
package lxd

import (
	_ "github.com/canonical/lxd/client"
	_ "github.com/canonical/lxd/shared/api"
)
