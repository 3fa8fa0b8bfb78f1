package karmada

import "github.com/flowdev/flow/tasks"

// Register adds the karmadactl task types to r.
func Register(r *tasks.Registry) error {
	for _, t := range []func() tasks.Type{initType, joinType, tokenType, registerType} {
		if err := r.Register(t()); err != nil {
			return err
		}
	}
	return nil
}
