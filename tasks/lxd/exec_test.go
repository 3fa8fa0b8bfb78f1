package lxd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
	"github.com/zclconf/go-cty/cty"
)

func TestExecValidate(t *testing.T) {
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "command", Task: &Exec{Instance: "m1", Command: []string{"ls"}}},
		{Name: "script with everything", Task: &Exec{Instance: "m1", Script: "true", Env: map[string]string{"A": "1"}, Cwd: "/tmp", User: 1000, Group: 1000, Stdin: "x", OkExitCodes: []int{3}}},
		{Name: "bad remote", Task: &Exec{Remote: map[string]string{"adress": "x"}, Instance: "m1", Script: "true"}, Attr: "remote", Msg: `unknown key "adress"`},
		{Name: "no instance", Task: &Exec{Script: "true"}, Attr: "instance", Msg: "must not be empty"},
		{Name: "bad instance name", Task: &Exec{Instance: "member_1", Script: "true"}, Attr: "instance", Msg: "only letters, digits and hyphens"},
		{Name: "neither", Task: &Exec{Instance: "m1"}, Attr: "command", Msg: "one of command or script is required"},
		{Name: "both", Task: &Exec{Instance: "m1", Command: []string{"ls"}, Script: "ls"}, Attr: "script", Msg: "mutually exclusive"},
		{Name: "empty command", Task: &Exec{Instance: "m1", Command: []string{}}, Attr: "command", Msg: "must not be empty"},
		{Name: "empty program", Task: &Exec{Instance: "m1", Command: []string{""}}, Attr: "command", Msg: "the program"},
		{Name: "env name with =", Task: &Exec{Instance: "m1", Script: "true", Env: map[string]string{"A=B": "1"}}, Attr: "env", Msg: "no '='"},
		{Name: "relative cwd", Task: &Exec{Instance: "m1", Script: "true", Cwd: "tmp"}, Attr: "cwd", Msg: `"tmp" must be an absolute path`},
		{Name: "negative user", Task: &Exec{Instance: "m1", Script: "true", User: -1}, Attr: "user", Msg: "not a valid numeric ID"},
		{Name: "huge group", Task: &Exec{Instance: "m1", Script: "true", Group: 1 << 40}, Attr: "group", Msg: "not a valid numeric ID"},
	})
}

func TestExecType(t *testing.T) {
	taskstest.CheckType(t, execType(), map[string]cty.Type{"exit_code": cty.Number, "stdout": cty.String, "stderr": cty.String})
	taskstest.CheckExample(t, execType(), exampleVars)
}

func TestExecRun(t *testing.T) {
	inst := launchTestInstance(t)
	tests := []struct {
		name       string
		exec       Exec
		wantCode   int64
		wantStdout string
		wantStderr string
		wantErr    string // "" means success
	}{
		{name: "command and both streams", exec: Exec{Script: "echo out; echo err >&2"}, wantStdout: "out", wantStderr: "err"},
		{name: "argv without a shell", exec: Exec{Command: []string{"echo", "a  b", "$HOME"}}, wantStdout: "a  b $HOME"},
		{name: "exit code fails with last stderr line", exec: Exec{Script: "echo first >&2; echo boom >&2; exit 3"},
			wantCode: 3, wantStderr: "first\nboom", wantErr: `exec in "` + inst + `": exit code 3: boom`},
		{name: "exit code without stderr", exec: Exec{Script: "exit 4"}, wantCode: 4, wantErr: `exec in "` + inst + `": exit code 4`},
		{name: "ok_exit_codes", exec: Exec{Script: "exit 3", OkExitCodes: []int{3}}, wantCode: 3},
		{name: "stdin", exec: Exec{Command: []string{"cat"}, Stdin: "hello\nworld\n"}, wantStdout: "hello\nworld"},
		{name: "no stdin is EOF", exec: Exec{Command: []string{"cat"}}},
		{name: "env", exec: Exec{Script: `echo "$GREETING $HOME"`, Env: map[string]string{"GREETING": "hi there"}}, wantStdout: "hi there /root"},
		{name: "cwd", exec: Exec{Command: []string{"pwd"}, Cwd: "/tmp"}, wantStdout: "/tmp"},
		{name: "user and group", exec: Exec{Script: "id -u; id -g", User: 1000, Group: 2000}, wantStdout: "1000\n2000"},
		{name: "program not found", exec: Exec{Command: []string{"nosuchprogram"}}, wantCode: 127,
			wantErr: `exec in "` + inst + `": program "nosuchprogram" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.exec.Instance = inst
			out, printed, err := validateAndRun(t, &tt.exec)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Run: %v\noutput:\n%s", err, printed)
			}
			if tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)) {
				t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
			}
			if got := outNum(t, out, "exit_code"); got != tt.wantCode {
				t.Errorf("exit_code = %d, want %d", got, tt.wantCode)
			}
			if got := outStr(t, out, "stdout"); got != tt.wantStdout {
				t.Errorf("stdout = %q, want %q", got, tt.wantStdout)
			}
			if got := outStr(t, out, "stderr"); got != tt.wantStderr {
				t.Errorf("stderr = %q, want %q", got, tt.wantStderr)
			}
			for _, line := range strings.Split(tt.wantStdout+"\n"+tt.wantStderr, "\n") {
				if !strings.Contains(printed, line) {
					t.Errorf("printed output %q lacks %q", printed, line)
				}
			}
		})
	}
}

func TestExecUnknownInstance(t *testing.T) {
	name := testName("nosuch")
	out, _, err := validateAndRun(t, &Exec{Instance: name, Command: []string{"true"}})
	if want := `exec in "` + name + `": instance not found`; err == nil || err.Error() != want {
		t.Errorf("Run error = %v, want %q", err, want)
	}
	if out != nil {
		t.Errorf("outputs = %v, want none", out)
	}
}

// timedWriter records when each write arrived.
type timedWriter struct {
	mu     sync.Mutex
	writes []timedWrite
}

type timedWrite struct {
	at   time.Time
	text string
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, timedWrite{time.Now(), string(p)})
	return len(p), nil
}

func (w *timedWriter) firstWith(s string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wr := range w.writes {
		if strings.Contains(wr.text, s) {
			return wr.at, true
		}
	}
	return time.Time{}, false
}

// Output reaches the Env while the command still runs.
func TestExecStreamsOutput(t *testing.T) {
	inst := launchTestInstance(t)
	w := &timedWriter{}
	env, _ := taskstest.NewEnv(t)
	env.Stdout = w
	out, err := (&Exec{Instance: inst, Script: "echo first; sleep 2; echo second"}).Run(context.Background(), env)
	done := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	at, ok := w.firstWith("first")
	if !ok {
		t.Fatalf("first line never streamed: %+v", w.writes)
	}
	if lead := done.Sub(at); lead < time.Second {
		t.Errorf("first line arrived %v before the end, want it streamed at once (about 2s before)", lead)
	}
	if got := outStr(t, out, "stdout"); got != "first\nsecond" {
		t.Errorf("stdout = %q", got)
	}
}

func setExecStopGrace(t *testing.T, d time.Duration) {
	old := execStopGrace
	execStopGrace = d
	t.Cleanup(func() { execStopGrace = old })
}

func TestExecCancel(t *testing.T) {
	inst := launchTestInstance(t)
	tests := []struct {
		name    string
		script  string // prints "started" once its processes run
		grace   time.Duration
		timeout bool // deadline instead of cancel
		maxTime time.Duration
	}{
		{
			name:    "SIGTERM ends the command and its children",
			script:  `sleep 300 & sleep 301; echo never`,
			grace:   10 * time.Second,
			maxTime: 3 * time.Second,
		},
		{
			name:    "deadline",
			script:  `sleep 300 & sleep 301; echo never`,
			grace:   10 * time.Second,
			timeout: true,
			maxTime: 3 * time.Second,
		},
		{
			name:    "SIGTERM ignored, SIGKILL after the grace period",
			script:  `trap '' TERM; sh -c "trap '' TERM; sleep 300" & sleep 301; echo never`,
			grace:   time.Second,
			maxTime: 4 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setExecStopGrace(t, tt.grace)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			want := context.Canceled
			if tt.timeout {
				ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				want = context.DeadlineExceeded
			}
			env, buf := taskstest.NewEnv(t)
			type result struct {
				out tasks.Outputs
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := (&Exec{Instance: inst, Script: "echo started; " + tt.script}).Run(ctx, env)
				done <- result{out, err}
			}()
			waitFor(t, "the command to start", func() bool { return strings.Contains(buf.String(), "started") })
			waitFor(t, "its sleeps to run", func() bool { return inside(t, inst, "pidof sleep | wc -w") == "2" })
			start := time.Now()
			if !tt.timeout {
				cancel()
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not return within 20s of cancellation")
			}
			if took := time.Since(start); took > tt.maxTime {
				t.Errorf("Run returned %v after cancellation, want at most %v", took, tt.maxTime)
			}
			wantMsg := `exec in "` + inst + `": stopped: ` + want.Error()
			if !errors.Is(r.err, want) || r.err.Error() != wantMsg {
				t.Errorf("Run error = %v, want %q", r.err, wantMsg)
			}
			if r.out == nil || outNum(t, r.out, "exit_code") != -1 || outStr(t, r.out, "stdout") != "started" {
				t.Errorf("outputs = %v, want exit_code -1 and stdout %q", r.out, "started")
			}
			waitFor(t, "every process of the command to end", func() bool {
				return inside(t, inst, "pidof sleep | wc -w") == "0"
			})
		})
	}
}

func TestExecAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	env, _ := taskstest.NewEnv(t)
	out, err := (&Exec{Instance: "m1", Command: []string{"true"}}).Run(ctx, env)
	if want := `exec in "m1": not started: context canceled`; !errors.Is(err, context.Canceled) || err.Error() != want {
		t.Errorf("Run error = %v, want %q", err, want)
	}
	if out != nil {
		t.Errorf("outputs = %v, want none", out)
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestExecStartsInstanceLeftRunning: an instance that is stopped although LXD last
// recorded it running (volatile.last_state.power RUNNING, what a container that went
// down while the daemon was killed keeps) is started and the command runs; one
// stopped through LXD (the record says STOPPED) is not started, and the task fails.
func TestExecStartsInstanceLeftRunning(t *testing.T) {
	inst := launchTestInstance(t)
	lxc(t, "stop", "--force", inst)
	lxc(t, "config", "set", inst, "volatile.last_state.power", "RUNNING")
	out, printed := mustValidateAndRun(t, &Exec{Instance: inst, Script: "echo ran"})
	if got := outStr(t, out, "stdout"); got != "ran" {
		t.Errorf("stdout = %q, want ran", got)
	}
	wantContains(t, "printed", printed, `instance "`+inst+`" is stopped, but LXD last recorded it running`)
	if state := strings.TrimSpace(lxcGet(t, "list", inst, "-c", "s", "-f", "csv")); state != "RUNNING" {
		t.Errorf("instance is %s after the exec, want RUNNING", state)
	}

	lxc(t, "stop", "--force", inst)
	wantRunError(t, &Exec{Instance: inst, Script: "echo ran"}, `exec in "`+inst+`": instance is not running (it was stopped through LXD)`)
	if state := strings.TrimSpace(lxcGet(t, "list", inst, "-c", "s", "-f", "csv")); state != "STOPPED" {
		t.Errorf("an instance stopped through LXD is %s after the exec, want STOPPED", state)
	}
}
