package image

import "github.com/flowdev/flow/tasks"

// Register adds the image task types to r.
func Register(r *tasks.Registry) error {
	return r.Add(mirrorType, buildType, exportType)
}
