package lxd

import "github.com/flowdev/flow/tasks"

// Register adds every LXD task type to r; each file defines its type's function.
func Register(r *tasks.Registry) error {
	return r.Add(
		profileType,
		launchType,
		deleteType,
		imageImportType,
		imageCopyType,
		execType,
		filePushType,
		filePullType,
		proxyDeviceType,
	)
}
