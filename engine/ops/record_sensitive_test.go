package ops

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/engine/plan"
	"github.com/flowdev/flow/tasks"
)

// A map attribute with a sensitive key is recorded without the key (see
// plan.WithoutSensitiveKeys), the rest of it as given.
func TestSensitiveKeyNotRecorded(t *testing.T) {
	attr := tasks.Attribute{Name: "remote", Type: cty.Map(cty.String), SensitiveKeys: []string{"trust_token"}}
	withToken := map[string]cty.Value{"remote": cty.MapVal(map[string]cty.Value{
		"address":     cty.StringVal("https://127.0.0.2:8443"),
		"trust_token": cty.StringVal("secret-1").Mark(config.Sensitive),
	})}
	stored, withheld := storedInputs(plan.WithoutSensitiveKeys([]tasks.Attribute{attr}, withToken))
	if len(withheld) != 0 {
		t.Fatalf("withheld %v, want the remote recorded", withheld)
	}
	v, err := stored["remote"].Decode()
	if err != nil {
		t.Fatal(err)
	}
	if v.LengthInt() != 1 || v.Index(cty.StringVal("address")).AsString() != "https://127.0.0.2:8443" {
		t.Errorf("recorded remote %#v, want only the address", v)
	}
}
