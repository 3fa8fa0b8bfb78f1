package process

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/tasks"
	"github.com/flowdev/flow/tasks/taskstest"
)

func TestValidate(t *testing.T) {
	valid := func(edit func(p *Process)) *Process {
		p := &Process{Command: []string{"sleep", "30"}, PIDFile: "run/x.pid", LogFile: "logs/x.log"}
		edit(p)
		return p
	}
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "minimal", Task: valid(func(*Process) {})},
		{Name: "ready_url", Task: valid(func(p *Process) {
			p.ReadyURL = "https://127.0.0.1:5443/readyz"
			p.Insecure = true
			p.ReadyTimeout = "2m"
		})},
		{Name: "ready_tcp", Task: valid(func(p *Process) { p.ReadyTCP = "127.0.0.1:2379"; p.ReadyTimeout = "500ms" })},
		{Name: "all optional set", Task: valid(func(p *Process) { p.Env = map[string]string{"A": "1"}; p.Dir = "/"; p.Recreate = true })},
		{Name: "no command", Task: valid(func(p *Process) { p.Command = nil }), Attr: "command", Msg: "is required"},
		{Name: "empty command", Task: valid(func(p *Process) { p.Command = []string{} }), Attr: "command", Msg: "must not be empty"},
		{Name: "empty program", Task: valid(func(p *Process) { p.Command = []string{"", "x"} }), Attr: "command", Msg: "(the program) must not be empty"},
		{Name: "NUL in argument", Task: valid(func(p *Process) { p.Command = []string{"sleep", "3\x000"} }), Attr: "command", Msg: "NUL"},
		{Name: "env name with =", Task: valid(func(p *Process) { p.Env = map[string]string{"A=B": "1"} }), Attr: "env", Msg: "no '='"},
		{Name: "no pid_file", Task: valid(func(p *Process) { p.PIDFile = "" }), Attr: "pid_file", Msg: "must not be empty"},
		{Name: "no log_file", Task: valid(func(p *Process) { p.LogFile = "" }), Attr: "log_file", Msg: "must not be empty"},
		{Name: "log_file is pid_file", Task: valid(func(p *Process) { p.LogFile = "run/../run/x.pid" }), Attr: "log_file", Msg: "must differ from pid_file"},
		{Name: "both ready checks", Task: valid(func(p *Process) { p.ReadyURL = "http://127.0.0.1:1/"; p.ReadyTCP = "127.0.0.1:1" }), Attr: "ready_tcp", Msg: "mutually exclusive"},
		{Name: "insecure without url", Task: valid(func(p *Process) { p.Insecure = true; p.ReadyTCP = "127.0.0.1:1" }), Attr: "insecure", Msg: "without ready_url"},
		{Name: "timeout without check", Task: valid(func(p *Process) { p.ReadyTimeout = "1m" }), Attr: "ready_timeout", Msg: "without ready_url or ready_tcp"},
		{Name: "bad timeout", Task: valid(func(p *Process) { p.ReadyTCP = "127.0.0.1:1"; p.ReadyTimeout = "soon" }), Attr: "ready_timeout", Msg: "is not a duration"},
		{Name: "zero timeout", Task: valid(func(p *Process) { p.ReadyTCP = "127.0.0.1:1"; p.ReadyTimeout = "0s" }), Attr: "ready_timeout", Msg: "positive duration"},
		{Name: "url scheme", Task: valid(func(p *Process) { p.ReadyURL = "ftp://127.0.0.1/" }), Attr: "ready_url", Msg: `scheme must be http or https, not "ftp"`},
		{Name: "url without host", Task: valid(func(p *Process) { p.ReadyURL = "http:///readyz" }), Attr: "ready_url", Msg: "host must not be empty"},
		{Name: "url unparsable", Task: valid(func(p *Process) { p.ReadyURL = "http://[::1" }), Attr: "ready_url", Msg: "missing ']'"},
		{Name: "tcp without port", Task: valid(func(p *Process) { p.ReadyTCP = "127.0.0.1" }), Attr: "ready_tcp", Msg: "want host:port"},
		{Name: "tcp without host", Task: valid(func(p *Process) { p.ReadyTCP = ":80" }), Attr: "ready_tcp", Msg: "host must not be empty"},
		{Name: "tcp named port", Task: valid(func(p *Process) { p.ReadyTCP = "127.0.0.1:http" }), Attr: "ready_tcp", Msg: "must be a number"},
		{Name: "tcp port 0", Task: valid(func(p *Process) { p.ReadyTCP = "127.0.0.1:0" }), Attr: "ready_tcp", Msg: "must be a number"},
	})
}

func TestValidateStop(t *testing.T) {
	taskstest.CheckValidate(t, []taskstest.ValidateCase{
		{Name: "minimal", Task: &ProcessStop{PIDFile: "x.pid"}},
		{Name: "all set", Task: &ProcessStop{PIDFile: "x.pid", Signal: "INT", StopTimeout: "5s"}},
		{Name: "SIG prefix, lower case", Task: &ProcessStop{PIDFile: "x.pid", Signal: "sigkill"}},
		{Name: "no pid_file", Task: &ProcessStop{}, Attr: "pid_file", Msg: "must not be empty"},
		{Name: "unknown signal", Task: &ProcessStop{PIDFile: "x.pid", Signal: "STOP"}, Attr: "signal", Msg: `unknown signal "STOP"`},
		{Name: "numeric signal", Task: &ProcessStop{PIDFile: "x.pid", Signal: "15"}, Attr: "signal", Msg: "unknown signal"},
		{Name: "bad timeout", Task: &ProcessStop{PIDFile: "x.pid", StopTimeout: "-1s"}, Attr: "stop_timeout", Msg: "positive duration"},
	})
}

func TestRegister(t *testing.T) {
	r := tasks.NewRegistry()
	if err := Register(r); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for name, outputs := range map[string]map[string]cty.Type{
		"process":      {"pid": cty.Number, "log_file": cty.String},
		"process_stop": {"stopped": cty.Bool},
	} {
		typ, ok := r.Lookup(name)
		if !ok {
			t.Fatalf("type %q not registered", name)
		}
		taskstest.CheckType(t, *typ, outputs)
		taskstest.CheckExample(t, *typ, nil)
	}
	if err := Register(r); err == nil {
		t.Error("second Register succeeded, want duplicate error")
	}
}

func TestParseRecord(t *testing.T) {
	tests := []struct {
		name, text string
		want       record
		wantErr    string
	}{
		{name: "flow's", text: "42\n{\"argv\":[\"sleep\",\"30\"],\"start_ticks\":7}\n", want: record{PID: 42, Argv: []string{"sleep", "30"}, Start: 7}},
		{name: "pid only", text: "42\n", wantErr: "not written by flow"},
		{name: "no argv", text: "42\n{\"start_ticks\":7}\n", wantErr: "not written by flow"},
		{name: "not a pid", text: "x\n", wantErr: `first line "x" is not a pid`},
		{name: "negative pid", text: "-1\n{}", wantErr: "is not a pid"},
		{name: "empty", text: "", wantErr: "is not a pid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRecord([]byte(tt.text))
			if tt.wantErr != "" {
				if err == nil || !contains(err.Error(), tt.wantErr) {
					t.Fatalf("parseRecord error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.PID != tt.want.PID || got.Start != tt.want.Start || argvString(got.Argv) != argvString(tt.want.Argv) {
				t.Errorf("parseRecord = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
