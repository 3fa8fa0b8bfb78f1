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
// with either. With fsync it is dominated by the fsync; the nosync variants
// (bbolt's NoSync, test only) show the CPU and write cost alone.
func BenchmarkCommit(b *testing.B) {
	for _, size := range []struct {
		runs, existing int
		nosync         bool
	}{{0, 0, false}, {0, 10000, false}, {5, 10000, false}, {0, 0, true}, {0, 10000, true}, {5, 10000, true}} {
		name := fmt.Sprintf("runs=%d/existing=%d", size.runs, size.existing)
		if size.nosync {
			name = "nosync/" + name
		}
		b.Run(name, func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "state.db"))
			s.db.NoSync = size.nosync
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

// BenchmarkOpen opens (writable: checked under a shared lock, then locked
// exclusively) and closes a state of 10 runs of 10,000 instances with logs.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "state.db")
	s := open(b, path)
	s.db.NoSync = true // setup only
	out := mustEncode(b, cty.StringVal("i-0123456789abcdef"))
	for range 10 {
		run := &Run{Flow: "bench.hcl"}
		if err := s.CreateRun(run); err != nil {
			b.Fatal(err)
		}
		for start := 0; start < 10000; start += 1000 {
			var ins []*Instance
			logs := map[string][]byte{}
			for i := start; i < start+1000; i++ {
				addr := fmt.Sprintf("task.build[%d]", i)
				ins = append(ins, &Instance{Address: addr, Status: Succeeded, Outputs: map[string]Value{"id": out}, Fingerprint: "sha256:0123456789abcdef"})
				logs[addr] = []byte("building...\ndone\n")
			}
			if err := s.Commit(run.ID, nil, ins, logs); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		b.Run(fmt.Sprintf("readonly=%v", ro), func(b *testing.B) {
			for b.Loop() {
				s, err := Open(path, Options{ReadOnly: ro})
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
