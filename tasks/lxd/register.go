package lxd

import "github.com/flowdev/flow/tasks"

// Register adds every LXD task type to r.
func Register(r *tasks.Registry) error {
	for _, t := range []func() tasks.Type{
		// each file adds its type here: profileType, launchType, ...
		profileType,
		launchType,
		deleteType,
		imageImportType,
		execType,
		filePushType,
		filePullType,
		proxyDeviceType,
	} {
		if err := r.Register(t()); err != nil {
			return err
		}
	}
	return nil
}
