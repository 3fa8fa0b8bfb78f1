package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"

	pluginpb "github.com/flowdev/flow/plugin/sdk/proto"
)

func TestNewServerRefuses(t *testing.T) {
	run := func(context.Context, Task, *Env) (Values, error) { return nil, nil }
	for _, c := range []struct {
		name  string
		types []Type
		want  string
	}{
		{"no name", []Type{{Run: run}}, "has no name"},
		{"twice", []Type{{Name: "a", Run: run}, {Name: "a", Run: run}}, `"a" is served twice`},
		{"no run", []Type{{Name: "a"}}, `"a" has no Run`},
		{"bad type", []Type{{Name: "a", Run: run, Attributes: []Attribute{{Name: "x", Type: "str"}}}}, `attribute "x"`},
	} {
		if _, err := NewServer(c.types...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: NewServer = %v, want %q", c.name, err, c.want)
		}
	}
}

// TestValues: attributes arrive as cty JSON (a dynamic one wrapped with its type),
// outputs leave so, and the schema says which hooks a type has.
func TestValues(t *testing.T) {
	typ := Type{Name: "t",
		Attributes: []Attribute{{Name: "s", Type: String}, {Name: "d", Type: Dynamic}, {Name: "m", Type: MapOf(Number)}},
		Outputs:    []Output{{Name: "o", Type: Dynamic}, {Name: "n", Type: Number, Sensitive: true}},
		Run: func(_ context.Context, task Task, env *Env) (Values, error) {
			return Values{"o": task["d"], "n": task["m"].(map[string]any)["k"]}, nil
		},
		Probe: func(context.Context, Task, *Env, Values) (Answer, error) {
			return Answer{State: Differs, Detail: "changed"}, nil
		},
	}
	srv, err := NewServer(typ)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := srv.Schema(t.Context(), &pluginpb.SchemaRequest{ProtocolVersion: ProtocolVersion})
	if err != nil || len(schema.GetTypes()) != 1 {
		t.Fatalf("Schema = %v, %v", schema, err)
	}
	if ts := schema.GetTypes()[0]; !ts.GetProbes() || ts.GetChecks() || ts.GetDestroys() || string(ts.GetAttributes()[2].GetType()) != `["map","number"]` {
		t.Errorf("schema %v", ts)
	}
	s := srv.(*server)
	_, task, err := s.decode(&pluginpb.TaskRequest{Type: "t", Attributes: map[string][]byte{
		"s": []byte(`"x"`), "d": []byte(`{"value":{"a":[1,"b"]},"type":["object",{"a":["tuple",["number","string"]]}]}`), "m": []byte(`{"k":2}`)}})
	if err != nil || task.String("s") != "x" || task.Has("nope") {
		t.Fatalf("decode = %v, %v", task, err)
	}
	vals, _ := typ.Run(t.Context(), task, nil)
	enc, err := encodeOutputs(&typ, vals)
	if err != nil {
		t.Fatal(err)
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(enc["o"].GetJson(), &o); err != nil || string(o["type"]) != `["object",{"a":["tuple",["number","string"]]}]` {
		t.Errorf("dynamic output %s, %v", enc["o"].GetJson(), err)
	}
	if string(enc["n"].GetJson()) != "2" || !enc["n"].GetSensitive() {
		t.Errorf("number output %v", enc["n"])
	}
	res, _ := srv.Probe(t.Context(), &pluginpb.ProbeRequest{Task: &pluginpb.TaskRequest{Type: "t"}})
	if res.GetState() != pluginpb.CheckResponse_DIFFERS || res.GetDetail() != "changed" {
		t.Errorf("Probe = %v", res)
	}
}

// destroyStream is the server side of a Destroy call: it keeps what is sent.
type destroyStream struct {
	grpc.ServerStream
	ctx    context.Context
	events []*pluginpb.Event
}

func (s *destroyStream) Context() context.Context { return s.ctx }
func (s *destroyStream) Send(e *pluginpb.Event) error {
	s.events = append(s.events, e)
	return nil
}

// TestDestroyGetsRecorded: a type's Destroy is given the outputs the success recorded
// (decoded to their declared types), and none when the request holds none.
func TestDestroyGetsRecorded(t *testing.T) {
	var got Values
	calls := 0
	typ := Type{Name: "t", Outputs: []Output{{Name: "id", Type: String}, {Name: "n", Type: Number}},
		Run: func(context.Context, Task, *Env) (Values, error) { return nil, nil },
		Destroy: func(_ context.Context, _ Task, _ *Env, recorded Values) error {
			calls++
			got = recorded
			return nil
		}}
	srv, err := NewServer(typ)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  *pluginpb.DestroyRequest
		want Values
	}{
		{"recorded", &pluginpb.DestroyRequest{Task: &pluginpb.TaskRequest{Type: "t"}, HasRecorded: true,
			Recorded: map[string]*pluginpb.Value{"id": {Json: []byte(`"vm-7"`)}, "n": {Json: []byte(`3`)}}},
			Values{"id": "vm-7", "n": float64(3)}},
		{"none recorded", &pluginpb.DestroyRequest{Task: &pluginpb.TaskRequest{Type: "t"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, calls = nil, 0
			stream := &destroyStream{ctx: t.Context()}
			if err := srv.Destroy(tt.req, stream); err != nil {
				t.Fatal(err)
			}
			if calls != 1 || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Destroy called %d times with %v, want once with %v", calls, got, tt.want)
			}
		})
	}
}
