package karmada

import "github.com/flowdev/flow/tasks"

// Register adds the karmadactl task types to r.
func Register(r *tasks.Registry) error {
	return r.Add(initType, joinType, tokenType, registerType, addonType)
}
