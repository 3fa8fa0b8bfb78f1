package exec

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/internal/output"
	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
)

// syncBuffer is a bytes.Buffer safe for use by Run's copy goroutines and the test.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{} // closed on the first write
	once  sync.Once
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{first: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.once.Do(func() { close(b.first) })
	return b.buf.Write(p)
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testEnv(stdout, stderr *syncBuffer) *tasks.Env {
	return &tasks.Env{
		Address: "exec.test", Attempt: 1, Stdout: stdout, Stderr: stderr,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: io.Discard}),
	}
}

// Debug logs name the argv, pid and exit code, and env names but never env values.
func TestRunLogsNoEnvValues(t *testing.T) {
	logs := newSyncBuffer()
	env := testEnv(newSyncBuffer(), newSyncBuffer())
	env.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: logs})
	e := &Exec{Command: []string{"sh", "-c", "exit 0"}, Env: map[string]string{"API_TOKEN": "hunter2"}}
	if _, err := e.Run(context.Background(), env); err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := logs.String()
	for _, want := range []string{"[DEBUG]", `argv=["sh", "-c", "exit 0"]`, "pid=", "exit_code=0", "API_TOKEN"} {
		if !strings.Contains(got, want) {
			t.Errorf("logs lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hunter2") {
		t.Errorf("logs contain an env value:\n%s", got)
	}
}

func outString(t *testing.T, out tasks.Outputs, name string) string {
	t.Helper()
	v, ok := out[name]
	if !ok || !v.Type().Equals(cty.String) {
		t.Fatalf("output %q = %#v, want a string", name, v)
	}
	return v.AsString()
}

func outCode(t *testing.T, out tasks.Outputs) int {
	t.Helper()
	v, ok := out["exit_code"]
	if !ok || !v.Type().Equals(cty.Number) {
		t.Fatalf("output exit_code = %#v, want a number", v)
	}
	i, _ := v.AsBigFloat().Int64()
	return int(i)
}

func TestRun(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		dir := t.TempDir()
		realDir, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name       string
			exec       Exec
			wantErr    string // exact; "" means success
			wantCode   int
			wantStdout string
			wantStderr string
			noOutputs  bool // the process never started
		}{
			{name: "command", exec: Exec{Command: []string{"echo", "  hello  ", "world"}}, wantStdout: "hello   world"},
			{name: "script", exec: Exec{Script: "echo out; echo err >&2"}, wantStdout: "out", wantStderr: "err"},
			{name: "outputs trimmed", exec: Exec{Script: "printf '\\n\\t  a  b \\n\\n'; printf '  e  ' >&2"}, wantStdout: "a  b", wantStderr: "e"},
			{name: "env added", exec: Exec{Script: `printf '%s' "$FLOW_EXEC_TEST"`, Env: map[string]string{"FLOW_EXEC_TEST": "v1"}}, wantStdout: "v1"},
			{name: "env overrides and inherits", exec: Exec{Script: `printf '%s|%s' "$HOME" "${PATH:+set}"`, Env: map[string]string{"HOME": "/elsewhere"}}, wantStdout: "/elsewhere|set"},
			{name: "dir", exec: Exec{Command: []string{"pwd", "-P"}, Dir: dir}, wantStdout: realDir},
			{name: "stdin", exec: Exec{Command: []string{"cat"}, Stdin: "  piped in\n"}, wantStdout: "piped in"},
			{name: "no stdin reads nothing", exec: Exec{Command: []string{"cat"}}},
			{name: "stdin not read", exec: Exec{Command: []string{"true"}, Stdin: strings.Repeat("x", 1<<20)}},
			{name: "ok exit code", exec: Exec{Script: "echo fine; exit 3", OkExitCodes: []int{1, 3}}, wantCode: 3, wantStdout: "fine"},
			{name: "command fails", exec: Exec{Command: []string{"false"}}, wantErr: `command "false" exited with code 1`, wantCode: 1},
			{name: "script fails with outputs", exec: Exec{Script: "echo partial; echo oops >&2; exit 3"}, wantErr: "script exited with code 3", wantCode: 3, wantStdout: "partial", wantStderr: "oops"},
			{name: "ok codes do not cover others", exec: Exec{Script: "exit 2", OkExitCodes: []int{3}}, wantErr: "script exited with code 2", wantCode: 2},
			{name: "killed by signal", exec: Exec{Script: "kill -KILL $$"}, wantErr: "script killed by signal killed", wantCode: -1},
			{name: "missing binary", exec: Exec{Command: []string{"nosuchcmd"}}, wantErr: `start "nosuchcmd": executable file not found in $PATH`, noOutputs: true},
			{name: "missing dir", exec: Exec{Command: []string{"pwd"}, Dir: filepath.Join(dir, "nope")}, wantErr: `start "pwd": dir ` + filepath.Join(dir, "nope") + `: no such file or directory`, noOutputs: true},
			{name: "dir is a file", exec: Exec{Script: "pwd", Dir: "/dev/null"}, wantErr: `start script: dir /dev/null: not a directory`, noOutputs: true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := as(t, &tt.exec).Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
				stdout, stderr := newSyncBuffer(), newSyncBuffer()
				out, err := as(t, &tt.exec).Run(context.Background(), testEnv(stdout, stderr))
				switch {
				case tt.wantErr == "" && err != nil:
					t.Fatalf("Run: %v", err)
				case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
					t.Fatalf("Run error = %v, want %q", err, tt.wantErr)
				}
				if tt.noOutputs {
					if out != nil {
						t.Errorf("outputs = %v, want nil", out)
					}
					return
				}
				if got := outCode(t, out); got != tt.wantCode {
					t.Errorf("exit_code = %d, want %d", got, tt.wantCode)
				}
				if got := outString(t, out, "stdout"); got != tt.wantStdout {
					t.Errorf("stdout = %q, want %q", got, tt.wantStdout)
				}
				if got := outString(t, out, "stderr"); got != tt.wantStderr {
					t.Errorf("stderr = %q, want %q", got, tt.wantStderr)
				}
				// The streams get the untrimmed output.
				if !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
					t.Errorf("streamed stdout %q, stderr %q; want them to contain the outputs", stdout, stderr)
				}
			})
		}
	})
}

func TestRunStreamsBeforeExit(t *testing.T) {
	setKillGrace(t, 200*time.Millisecond)
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stdout, stderr := newSyncBuffer(), newSyncBuffer()
		done := make(chan error, 1)
		go func() {
			_, err := as(t, &Exec{Script: "echo ready; sleep 30"}).Run(ctx, testEnv(stdout, stderr))
			done <- err
		}()
		select {
		case <-stdout.first:
		case err := <-done:
			t.Fatalf("Run returned (%v) before anything was streamed", err)
		case <-time.After(5 * time.Second):
			t.Fatal("no output streamed within 5s")
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned (%v) while the script still sleeps", err)
		default:
		}
		if got := stdout.String(); got != "ready\n" {
			t.Errorf("streamed %q, want %q", got, "ready\n")
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run error = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	})
}

func TestRunOutputCap(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		const total = 200 << 10
		tests := []struct {
			name   string
			script string
			stream func(out, err *syncBuffer) *syncBuffer
			output string
		}{
			{"stdout", "head -c 204800 /dev/zero | tr '\\0' x", func(o, _ *syncBuffer) *syncBuffer { return o }, "stdout"},
			{"stderr", "head -c 204800 /dev/zero | tr '\\0' y >&2", func(_, e *syncBuffer) *syncBuffer { return e }, "stderr"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				stdout, stderr := newSyncBuffer(), newSyncBuffer()
				out, err := as(t, &Exec{Script: tt.script}).Run(context.Background(), testEnv(stdout, stderr))
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got := len(outString(t, out, tt.output)); got != output.CaptureLimit {
					t.Errorf("len(%s output) = %d, want %d", tt.output, got, output.CaptureLimit)
				}
				if got := tt.stream(stdout, stderr).Len(); got != total {
					t.Errorf("streamed %d bytes, want all %d", got, total)
				}
			})
		}
	})
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) { w.n++; return 0, errors.New("broken") }

// A broken stream stops streaming, not the command or its capture.
func TestRunStreamErrorKeepsRunning(t *testing.T) {
	paths(t, func(t *testing.T, as func(*testing.T, *Exec) tasks.Task) {
		fw := &failWriter{}
		env := &tasks.Env{Stdout: fw, Stderr: fw}
		out, err := as(t, &Exec{Script: "echo one; sleep 0.1; echo two"}).Run(context.Background(), env)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got := outString(t, out, "stdout"); got != "one\ntwo" {
			t.Errorf("stdout = %q, want %q", got, "one\ntwo")
		}
		if fw.n != 1 {
			t.Errorf("stream written %d times, want 1 (stop after the error)", fw.n)
		}
	})
}
