package state

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// BenchmarkCommit commits one instance (with an output and a short log) per
// transaction into a run that already holds `existing` instances, next to
// `runs` earlier runs of the same size. The cost per commit should not grow
// with either (it is dominated by the fsync).
func BenchmarkCommit(b *testing.B) {
	for _, size := range []struct{ runs, existing int }{{0, 0}, {0, 10000}, {5, 10000}} {
		b.Run(fmt.Sprintf("runs=%d/existing=%d", size.runs, size.existing), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "state.db"))
			out := mustEncode(b, cty.ObjectVal(map[string]cty.Value{
				"id":   cty.StringVal("i-0123456789abcdef"),
				"port": cty.NumberIntVal(8080),
			}))
			now := time.Now()
			inst := func(i int) *Instance {
				return &Instance{
					Address: fmt.Sprintf("task.build[%d]", i), Type: "exec", Status: Succeeded, Attempts: 1,
					StartedAt: &now, FinishedAt: &now, Outputs: map[string]Value{"out": out},
					Fingerprint: "sha256:0123456789abcdef0123456789abcdef", AttrHashes: map[string]string{"command": "h"},
				}
			}
			var run *Run
			for range size.runs + 1 {
				run = &Run{Flow: "bench.hcl", Status: Running}
				if err := s.CreateRun(run); err != nil {
					b.Fatal(err)
				}
				const batch = 1000
				for start := 0; start < size.existing; start += batch {
					var ins []*Instance
					logs := map[string][]byte{}
					for i := start; i < start+batch && i < size.existing; i++ {
						in := inst(i)
						ins = append(ins, in)
						logs[in.Address] = []byte("building...\ndone\n")
					}
					if err := s.Commit(run.ID, nil, ins, logs); err != nil {
						b.Fatal(err)
					}
				}
			}
			log := []byte("building...\ndone\n")
			i := size.existing
			for b.Loop() {
				in := inst(i)
				if err := s.Commit(run.ID, nil, []*Instance{in}, map[string][]byte{in.Address: log}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
