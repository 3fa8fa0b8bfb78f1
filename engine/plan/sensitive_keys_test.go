package plan

import (
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/flowdev/flow/engine/config"
	"github.com/flowdev/flow/tasks"
)

// A sensitive key is marked, left out of the recorded inputs and the fingerprint; the
// rest of its map is recorded.
func TestSensitiveKeys(t *testing.T) {
	attr := tasks.Attribute{Name: "remote", Type: cty.Map(cty.String), SensitiveKeys: []string{"trust_token"}}
	task := &config.Task{Type: "t", Attrs: []tasks.Attribute{attr}}
	remote := func(token string) map[string]cty.Value {
		m := map[string]cty.Value{"address": cty.StringVal("https://127.0.0.2:8443")}
		if token != "" {
			m["trust_token"] = cty.StringVal(token)
		}
		return map[string]cty.Value{"remote": markSensitiveKeys(attr, cty.MapVal(m))}
	}
	withToken := remote("secret-1")
	if v := withToken["remote"].Index(cty.StringVal("trust_token")); !v.HasMark(config.Sensitive) {
		t.Errorf("trust_token is not marked sensitive")
	}
	if withToken["remote"].Index(cty.StringVal("address")).IsMarked() {
		t.Errorf("address is marked")
	}
	fp1, _ := Fingerprint(task, withToken)
	fp2, _ := Fingerprint(task, remote("secret-2"))
	fp0, _ := Fingerprint(task, remote(""))
	if fp1 != fp2 || fp1 != fp0 {
		t.Errorf("the token changes the fingerprint: %s %s %s", fp1, fp2, fp0)
	}
	if withToken["remote"].LengthInt() != 2 {
		t.Errorf("withoutSensitiveKeys changed its input")
	}
}
