package image

import "github.com/flowdev/flow/tasks"

// Register adds the image task types to r.
func Register(r *tasks.Registry) error {
	for _, t := range []func() tasks.Type{mirrorType, buildType, exportType} {
		if err := r.Register(t()); err != nil {
			return err
		}
	}
	return nil
}
