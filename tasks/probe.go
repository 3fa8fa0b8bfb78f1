package tasks

import "context"

// Prober is a task whose object can be looked at after Run succeeded, so that a
// recorded success is not trusted once the world changed: before a resume, a
// targeted run or a plan builds on a success with the same inputs, the engine
// refreshes it by calling Probe (Terraform's refresh). A non-empty drift says what is
// no longer as Run left it ("instance member3 is STOPPED", "port 16443 does not
// answer"); the engine then runs the instance again and says why.
//
// Probe must be read-only, fast (it runs for every such instance before a plan) and
// honour ctx. recorded are the outputs Run returned, nil when they were not stored.
// An error means the probe could not look (a daemon that does not answer): the engine
// runs the instance again, since Run is idempotent.
type Prober interface {
	Probe(ctx context.Context, env *Env, recorded Outputs) (drift string, err error)
}

// RefreshText says what a refresh of t's instances looks at, for `flow tasks` and the
// generated pages.
func (t *Type) RefreshText() string {
	if t.Refresh == "" {
		return "none: a recorded success is trusted (its Run checks its object when it runs)."
	}
	return "before a plan, a resume or a targeted run trusts a recorded success, flow looks whether " + t.Refresh + "; if not, the instance runs again."
}
