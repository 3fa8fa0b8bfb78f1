package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/flowdev/flow/engine/dag"
)

// Selects reports whether target selects the instance at addr: the same address, or
// a prefix of it that ends where an address part ends, so a task address
// (exec.build) selects all its instances and a module address (module.member or
// module.member["m1"]) everything inside it.
func Selects(target, addr string) bool {
	if !strings.HasPrefix(addr, target) {
		return false
	}
	rest := addr[len(target):]
	return rest == "" || rest[0] == '[' || rest[0] == '.'
}

// Select returns the part of p that the targets select, with everything it depends
// on, in the same order. Each target must select at least one instance. Outputs of
// the selection are evaluated only when every instance they read is in it.
func (p *Plan) Select(targets []string) (*Plan, error) {
	keep := map[string]bool{}
	var visit func(addr string)
	visit = func(addr string) {
		if keep[addr] {
			return
		}
		keep[addr] = true
		for _, d := range p.Instances[addr].Deps {
			visit(d)
		}
	}
	if err := p.CheckAddresses("--target", targets); err != nil {
		return nil, err
	}
	for _, addr := range p.Order {
		if AnySelects(targets, addr) {
			visit(addr)
		}
	}
	sub := &Plan{Flow: p.Flow, Scope: p.Scope, Instances: map[string]*Instance{}, Graph: dag.New[string](),
		root: p.root}
	for _, addr := range p.Order {
		if !keep[addr] {
			continue
		}
		inst := p.Instances[addr]
		sub.Order = append(sub.Order, addr)
		sub.Instances[addr] = inst // its order index keeps the relative order
		sub.Graph.Add(addr)
		for _, d := range inst.Deps {
			sub.Graph.Connect(addr, d)
		}
	}
	return sub, nil
}

// CheckAddresses reports the first of addrs that selects no instance of p; flag names
// where it was given.
func (p *Plan) CheckAddresses(flag string, addrs []string) error {
	for _, a := range addrs {
		if !slices.ContainsFunc(p.Order, func(addr string) bool { return Selects(a, addr) }) {
			return fmt.Errorf("%s %s selects no task instance of the flow", flag, a)
		}
	}
	return nil
}

// AnySelects reports whether one of targets selects addr.
func AnySelects(targets []string, addr string) bool {
	return slices.ContainsFunc(targets, func(t string) bool { return Selects(t, addr) })
}
